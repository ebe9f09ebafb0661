#ifndef CRESEED_CURL_H
#define CRESEED_CURL_H

// libcurl's easy interface, loaded at run time (dlopen of libcurl.so.4, the library Linux's
// FoundationNetworking itself uses), for the channel transfers on Linux: there URLSession decodes
// any Content-Encoding and cannot stop a transfer while bytes keep coming (see HTTPTransfer).
// No curl headers are needed to build: the few option numbers used are libcurl's stable ABI.

#include <stddef.h>
#include <stdint.h>

/// CURLoption values (curl/curl.h); stable across libcurl 7.x and 8.x.
#define RESEED_CURLOPT_WRITEDATA 10001
#define RESEED_CURLOPT_URL 10002
#define RESEED_CURLOPT_ERRORBUFFER 10010
#define RESEED_CURLOPT_WRITEFUNCTION 20011
#define RESEED_CURLOPT_HTTPHEADER 10023
#define RESEED_CURLOPT_HEADERDATA 10029
#define RESEED_CURLOPT_NOPROGRESS 43
#define RESEED_CURLOPT_FOLLOWLOCATION 52
#define RESEED_CURLOPT_XFERINFODATA 10057
#define RESEED_CURLOPT_MAXREDIRS 68
#define RESEED_CURLOPT_HEADERFUNCTION 20079
#define RESEED_CURLOPT_HTTPGET 80
#define RESEED_CURLOPT_NOSIGNAL 99
#define RESEED_CURLOPT_CONNECTTIMEOUT_MS 156
#define RESEED_CURLOPT_HTTP_CONTENT_DECODING 158
#define RESEED_CURLOPT_PROTOCOLS 181
#define RESEED_CURLOPT_REDIR_PROTOCOLS 182
#define RESEED_CURLOPT_XFERINFOFUNCTION 20219
#define RESEED_CURLOPT_SUPPRESS_CONNECT_HEADERS 265
#define RESEED_CURLOPT_PROTOCOLS_STR 10318
#define RESEED_CURLOPT_REDIR_PROTOCOLS_STR 10319


/// CURLcode values the transfer tells apart.
#define RESEED_CURLE_OK 0
#define RESEED_CURLE_UNSUPPORTED_PROTOCOL 1
#define RESEED_CURLE_COULDNT_RESOLVE_PROXY 5
#define RESEED_CURLE_COULDNT_RESOLVE_HOST 6
#define RESEED_CURLE_COULDNT_CONNECT 7
#define RESEED_CURLE_OPERATION_TIMEDOUT 28
#define RESEED_CURLE_TOO_MANY_REDIRECTS 47
#define RESEED_CURLE_UNKNOWN_OPTION 48


/// CURLPROTO_HTTP | CURLPROTO_HTTPS, for libcurl older than 7.85 (no *_PROTOCOLS_STR).
#define RESEED_CURLPROTO_HTTP_HTTPS 3L
/// CURL_ERROR_SIZE: the size of the buffer CURLOPT_ERRORBUFFER fills.
#define RESEED_CURL_ERROR_SIZE 256

/// A header line or a piece of the body (CURLOPT_HEADERFUNCTION / CURLOPT_WRITEFUNCTION):
/// returns `size * count` to go on, anything else to stop the transfer.
typedef size_t (*reseed_curl_data_callback)(char *data, size_t size, size_t count, void *context);
/// CURLOPT_XFERINFOFUNCTION: returns 0 to go on, anything else to stop the transfer.
typedef int (*reseed_curl_progress_callback)(void *context, int64_t download_total, int64_t download_now,
                                             int64_t upload_total, int64_t upload_now);

/// Loads libcurl and runs curl_global_init, once; 0 when it is usable, -1 otherwise
/// (reseed_curl_load_error() then says why). Thread-safe.
int reseed_curl_load(void);
/// Why reseed_curl_load() failed, or "".
const char *reseed_curl_load_error(void);

/// curl_easy_init(); NULL when libcurl is not loaded or out of memory.
void *reseed_curl_easy_init(void);
/// curl_easy_cleanup().
void reseed_curl_easy_cleanup(void *handle);
/// curl_easy_setopt() with a long argument.
int reseed_curl_setopt_long(void *handle, int option, long value);
/// curl_easy_setopt() with a pointer argument (a string, a list, a buffer, callback data).
int reseed_curl_setopt_pointer(void *handle, int option, const void *value);
/// curl_easy_setopt() of the header, write and progress callbacks and their context, and
/// CURLOPT_NOPROGRESS 0; the first failing CURLcode, or 0.
int reseed_curl_set_callbacks(void *handle, reseed_curl_data_callback header, reseed_curl_data_callback write,
                              reseed_curl_progress_callback progress, void *context);
/// curl_easy_perform(): blocks until the transfer ends.
int reseed_curl_perform(void *handle);
/// curl_easy_strerror().
const char *reseed_curl_strerror(int code);
/// curl_slist_append(); NULL when out of memory (the old list is then still valid).
void *reseed_curl_slist_append(void *list, const char *string);
/// curl_slist_free_all().
void reseed_curl_slist_free_all(void *list);

#endif

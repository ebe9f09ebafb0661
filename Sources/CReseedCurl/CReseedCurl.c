#include "CReseedCurl.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

typedef int (*setopt_function)(void *handle, int option, ...);

static struct {
    void *(*easy_init)(void);
    void (*easy_cleanup)(void *);
    setopt_function easy_setopt;
    int (*easy_perform)(void *);
    const char *(*easy_strerror)(int);
    void *(*slist_append)(void *, const char *);
    void (*slist_free_all)(void *);
    int (*global_init)(long);
} curl;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int load_status = -1;
static char load_error[512] = "";

static void load(void) {
    const char *names[] = {"libcurl.so.4", "libcurl.so"};
    void *library = NULL;
    for (size_t i = 0; i < sizeof names / sizeof names[0] && library == NULL; i++) {
        library = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    }
    if (library == NULL) {
        const char *reason = dlerror();
        snprintf(load_error, sizeof load_error, "cannot load libcurl.so.4: %s", reason != NULL ? reason : "not found");
        return;
    }
    struct { const char *name; void **slot; } symbols[] = {
        {"curl_easy_init", (void **)&curl.easy_init},
        {"curl_easy_cleanup", (void **)&curl.easy_cleanup},
        {"curl_easy_setopt", (void **)&curl.easy_setopt},
        {"curl_easy_perform", (void **)&curl.easy_perform},
        {"curl_easy_strerror", (void **)&curl.easy_strerror},
        {"curl_slist_append", (void **)&curl.slist_append},
        {"curl_slist_free_all", (void **)&curl.slist_free_all},
        {"curl_global_init", (void **)&curl.global_init},
    };
    for (size_t i = 0; i < sizeof symbols / sizeof symbols[0]; i++) {
        *symbols[i].slot = dlsym(library, symbols[i].name);
        if (*symbols[i].slot == NULL) {
            snprintf(load_error, sizeof load_error, "libcurl has no %s", symbols[i].name);
            return;
        }
    }
    // CURL_GLOBAL_DEFAULT (SSL | WIN32); reference-counted, so FoundationNetworking's own call is unaffected.
    int code = curl.global_init(3L);
    if (code != 0) {
        snprintf(load_error, sizeof load_error, "curl_global_init failed: %s", curl.easy_strerror(code));
        return;
    }
    load_status = 0;
}

int reseed_curl_load(void) {
    if (pthread_once(&load_once, load) != 0) return -1;
    return load_status;
}

const char *reseed_curl_load_error(void) { return load_error; }

void *reseed_curl_easy_init(void) { return reseed_curl_load() == 0 ? curl.easy_init() : NULL; }

void reseed_curl_easy_cleanup(void *handle) {
    if (handle != NULL) curl.easy_cleanup(handle);
}

int reseed_curl_setopt_long(void *handle, int option, long value) { return curl.easy_setopt(handle, option, value); }

int reseed_curl_setopt_pointer(void *handle, int option, const void *value) { return curl.easy_setopt(handle, option, value); }

int reseed_curl_set_callbacks(void *handle, reseed_curl_data_callback header, reseed_curl_data_callback write,
                              reseed_curl_progress_callback progress, void *context) {
    int code;
    if ((code = curl.easy_setopt(handle, RESEED_CURLOPT_HEADERFUNCTION, header)) != 0) return code;
    if ((code = curl.easy_setopt(handle, RESEED_CURLOPT_HEADERDATA, context)) != 0) return code;
    if ((code = curl.easy_setopt(handle, RESEED_CURLOPT_WRITEFUNCTION, write)) != 0) return code;
    if ((code = curl.easy_setopt(handle, RESEED_CURLOPT_WRITEDATA, context)) != 0) return code;
    if ((code = curl.easy_setopt(handle, RESEED_CURLOPT_XFERINFOFUNCTION, progress)) != 0) return code;
    if ((code = curl.easy_setopt(handle, RESEED_CURLOPT_XFERINFODATA, context)) != 0) return code;
    return curl.easy_setopt(handle, RESEED_CURLOPT_NOPROGRESS, 0L);
}

int reseed_curl_perform(void *handle) { return curl.easy_perform(handle); }

const char *reseed_curl_strerror(int code) { return reseed_curl_load() == 0 ? curl.easy_strerror(code) : "libcurl is not loaded"; }

void *reseed_curl_slist_append(void *list, const char *string) { return curl.slist_append(list, string); }

void reseed_curl_slist_free_all(void *list) {
    if (list != NULL) curl.slist_free_all(list);
}

#else

// Apple platforms use URLSession (see HTTPTransfer); nothing here is called there.
int reseed_curl_load(void) { return -1; }
const char *reseed_curl_load_error(void) { return "libcurl is used on Linux only"; }
void *reseed_curl_easy_init(void) { return NULL; }
void reseed_curl_easy_cleanup(void *handle) { (void)handle; }
int reseed_curl_setopt_long(void *handle, int option, long value) { (void)handle; (void)option; (void)value; return RESEED_CURLE_UNKNOWN_OPTION; }
int reseed_curl_setopt_pointer(void *handle, int option, const void *value) { (void)handle; (void)option; (void)value; return RESEED_CURLE_UNKNOWN_OPTION; }
int reseed_curl_set_callbacks(void *handle, reseed_curl_data_callback header, reseed_curl_data_callback write,
                              reseed_curl_progress_callback progress, void *context) {
    (void)handle; (void)header; (void)write; (void)progress; (void)context;
    return RESEED_CURLE_UNKNOWN_OPTION;
}
int reseed_curl_perform(void *handle) { (void)handle; return RESEED_CURLE_UNSUPPORTED_PROTOCOL; }
const char *reseed_curl_strerror(int code) { (void)code; return "libcurl is used on Linux only"; }
void *reseed_curl_slist_append(void *list, const char *string) { (void)list; (void)string; return NULL; }
void reseed_curl_slist_free_all(void *list) { (void)list; }

#endif

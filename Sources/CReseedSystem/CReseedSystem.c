// Glibc declares these only with _GNU_SOURCE, which Swift's Glibc module does not define.
#define _GNU_SOURCE
#include "CReseedSystem.h"

#include <errno.h>
#include <stdint.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sqlite3.h>

#if defined(__linux__)
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <linux/fs.h>
#elif defined(__APPLE__)
#include <pthread/qos.h>
#endif

ssize_t reseed_copy_file_range(int fd_in, int fd_out, size_t length) {
#if defined(__linux__)
    return copy_file_range(fd_in, NULL, fd_out, NULL, length, 0);
#else
    (void)fd_in; (void)fd_out; (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

int reseed_ficlone(int fd_dst, int fd_src) {
#if defined(__linux__) && defined(FICLONE)
    return ioctl(fd_dst, FICLONE, fd_src);
#else
    (void)fd_dst; (void)fd_src;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int reseed_rename_noreplace(int old_dirfd, const char *old_path, int new_dirfd, const char *new_path) {
#if defined(__linux__) && defined(RENAME_NOREPLACE)
    return renameat2(old_dirfd, old_path, new_dirfd, new_path, RENAME_NOREPLACE);
#else
    (void)old_dirfd; (void)old_path; (void)new_dirfd; (void)new_path;
    errno = ENOSYS;
    return -1;
#endif
}

int reseed_advise_sequential(int fd) {
#if defined(POSIX_FADV_SEQUENTIAL)
    return posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#else
    (void)fd;
    return 0;
#endif
}

int reseed_start_writeback(int fd, off_t offset, off_t length) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
    return sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE);
#else
    (void)fd; (void)offset; (void)length;
    return 0;
#endif
}

int reseed_lower_thread_priority(void) {
#if defined(__linux__)
    // On Linux a nice value is per thread: this one only.
    return setpriority(PRIO_PROCESS, (id_t)gettid(), 10);
#elif defined(__APPLE__)
    int code = pthread_set_qos_class_self_np(QOS_CLASS_UTILITY, 0);
    if (code != 0) { errno = code; return -1; }
    return 0;
#else
    return 0;
#endif
}

int reseed_sqlite_disable_triggers(void *db) {
    int enabled = 1;
    int code = sqlite3_db_config((sqlite3 *)db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &enabled);
    return code == SQLITE_OK && enabled == 0 ? 0 : -1;
}

int reseed_sqlite_keep_wal_on_close(void *db) {
    int kept = 0;
    int code = sqlite3_db_config((sqlite3 *)db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, &kept);
    return code == SQLITE_OK && kept == 1 ? 0 : -1;
}

static int reseed_wal_committed(void *autocheckpoint, sqlite3 *db, const char *schema, int frames) {
    sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 0, (int *)0);
    int limit = (int)(intptr_t)autocheckpoint;
    if (limit > 0 && frames >= limit) sqlite3_wal_checkpoint(db, schema);
    return SQLITE_OK;
}

void reseed_sqlite_checkpoint_on_close_once_written(void *db, int autocheckpoint) {
    sqlite3_wal_hook((sqlite3 *)db, reseed_wal_committed, (void *)(intptr_t)autocheckpoint);
}

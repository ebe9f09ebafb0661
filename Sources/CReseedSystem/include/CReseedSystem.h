#ifndef CRESEED_SYSTEM_H
#define CRESEED_SYSTEM_H

#include <stddef.h>
#include <sys/types.h>

#include "CReseedRowSet.h"

/// copy_file_range(2) on Linux; returns -1 with errno ENOSYS elsewhere.
ssize_t reseed_copy_file_range(int fd_in, int fd_out, size_t length);

/// ioctl(dst, FICLONE, src) on Linux; returns -1 with errno EOPNOTSUPP elsewhere.
int reseed_ficlone(int fd_dst, int fd_src);

/// renameat2(..., RENAME_NOREPLACE) on Linux; returns -1 with errno ENOSYS elsewhere.
int reseed_rename_noreplace(int old_dirfd, const char *old_path, int new_dirfd, const char *new_path);

/// posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL) where available; 0 elsewhere.
int reseed_advise_sequential(int fd);

/// sync_file_range(fd, offset, length, SYNC_FILE_RANGE_WRITE) on Linux: starts writeback of
/// the range without waiting for it; 0 elsewhere (a hint: fsync still makes the data durable).
int reseed_start_writeback(int fd, off_t offset, off_t length);

/// Lowers the calling thread's scheduling priority, for work the app does not wait on (a live
/// store's copy of a new seed): setpriority(PRIO_PROCESS, gettid(), 10) on Linux, the utility QoS
/// class on Apple platforms. 0 on success, -1 with errno set when the system refused.
int reseed_lower_thread_priority(void);

/// sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, &enabled) on an open `sqlite3 *`
/// (a variadic call Swift cannot make): 0 when triggers are off for the connection, -1 when not.
/// Declared with `void *` so that this module does not import a second copy of sqlite3.h into Swift.
int reseed_sqlite_disable_triggers(void *db);

/// sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, &kept) on an open `sqlite3 *`: the
/// connection's close leaves the `-wal` as it is (no checkpoint into the database file, no removal).
/// 0 when set, -1 when not.
int reseed_sqlite_keep_wal_on_close(void *db);

/// Replaces the connection's WAL hook with one that, at its first commit, turns the checkpoint on
/// close back on (SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE 0) and, at every commit, checkpoints once the
/// `-wal` holds `autocheckpoint` frames or more, as SQLite's own hook does (sqlite3_wal_autocheckpoint;
/// 0 or less: never). A connection that only reads keeps its `-wal` at close; one that wrote
/// checkpoints it into the database file, as by default.
void reseed_sqlite_checkpoint_on_close_once_written(void *db, int autocheckpoint);

#endif

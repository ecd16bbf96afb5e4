//! The sequential read of a code's rows, stepped through SQLite's C interface.
//!
//! A warm rerun reads every row of its codes once, and through rusqlite each of a
//! row's three columns cost a type check and a conversion besides the read itself:
//! a fifth of the run's time in the store went there. [`Scan`] asks SQLite for each
//! column as what it is stored as (an integer id, two blobs), and nothing else.
//! It is the only place the store calls SQLite directly; everything it hands on is
//! copied out of SQLite's buffers before the next step.

use rusqlite::{ffi, Connection};
use std::ffi::{c_int, CString};
use std::ptr::NonNull;

/// Row id, sample hash and body of the rows from `?1` on, in order. Where the rows
/// end and how many are read is checked as they come, not in SQL: SQLite ran four
/// more of its instructions a row for them.
const SQL: &str = "SELECT row, sample_hash, body FROM results WHERE row >= ?1 ORDER BY row";

/// A prepared scan statement of one connection (its [`super::read::CacheReader`]'s).
///
/// It must be dropped before its connection is closed: the reader declares it
/// before the connection, so it is dropped first.
pub(super) struct Scan {
    stmt: NonNull<ffi::sqlite3_stmt>,
}

// The statement is used only with its connection, which moves between threads with
// it (a reader is used by one thread at a time, as SQLite's multi-thread mode asks).
unsafe impl Send for Scan {}

/// How a scan ended early: SQLite's result code.
#[derive(Debug)]
pub(super) struct Failed(pub c_int);

impl Scan {
    /// Prepares the scan on `conn`.
    ///
    /// # Safety
    /// The scan must be dropped before `conn` is closed, and used only where `conn`
    /// may be used.
    pub(super) unsafe fn prepare(conn: &Connection) -> Result<Scan, Failed> {
        let sql = CString::new(SQL).expect("no NUL in the statement");
        let mut stmt = std::ptr::null_mut();
        // SAFETY: the handle is the live connection's; the SQL is NUL-terminated.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(
                conn.handle(),
                sql.as_ptr(),
                -1,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        match NonNull::new(stmt) {
            Some(stmt) if rc == ffi::SQLITE_OK => Ok(Scan { stmt }),
            Some(stmt) => {
                // SAFETY: a statement SQLite made, finalized once.
                unsafe { ffi::sqlite3_finalize(stmt.as_ptr()) };
                Err(Failed(rc))
            }
            None => Err(Failed(rc)),
        }
    }

    /// Calls `each` with the (row id, sample hash, body) of up to `limit` rows with
    /// ids in `from..to`, in id order. The slices live until `each` returns.
    pub(super) fn rows(
        &mut self,
        from: i64,
        to: i64,
        limit: i64,
        mut each: impl FnMut(i64, &[u8], &[u8]),
    ) -> Result<(), Failed> {
        let stmt = self.stmt.as_ptr();
        // SAFETY: `stmt` is a live statement of a connection this thread may use
        // (see `prepare`); every slice is read before the next step or reset, the
        // two calls that may free what SQLite's pointers point to.
        unsafe {
            let rc = ffi::sqlite3_bind_int64(stmt, 1, from);
            if rc != ffi::SQLITE_OK {
                ffi::sqlite3_reset(stmt);
                return Err(Failed(rc));
            }
            let mut left = limit;
            let ended = loop {
                if left <= 0 {
                    break Ok(());
                }
                left -= 1;
                match ffi::sqlite3_step(stmt) {
                    ffi::SQLITE_ROW => {
                        let id = ffi::sqlite3_column_int64(stmt, 0);
                        if id >= to {
                            break Ok(()); // the next code's rows
                        }
                        let hash = blob(stmt, 1);
                        let body = blob(stmt, 2);
                        each(id, hash, body);
                    }
                    ffi::SQLITE_DONE => break Ok(()),
                    rc => break Err(Failed(rc)),
                }
            };
            // ends the read (and its hold on the snapshot) until the next fill
            ffi::sqlite3_reset(stmt);
            ended
        }
    }
}

/// Column `col` of the current row as bytes (empty for NULL or an empty blob).
///
/// # Safety
/// `stmt` is a live statement on a row; the slice is valid until the next step,
/// reset or conversion of that column.
unsafe fn blob<'a>(stmt: *mut ffi::sqlite3_stmt, col: c_int) -> &'a [u8] {
    // blob first, then its length, as SQLite documents
    let data = unsafe { ffi::sqlite3_column_blob(stmt, col) };
    let len = unsafe { ffi::sqlite3_column_bytes(stmt, col) };
    match (data.is_null(), usize::try_from(len)) {
        (false, Ok(len)) if len > 0 => unsafe { std::slice::from_raw_parts(data.cast(), len) },
        _ => &[],
    }
}

impl Drop for Scan {
    fn drop(&mut self) {
        // SAFETY: the statement is live (its connection is still open: see
        // `prepare`) and finalized once.
        unsafe { ffi::sqlite3_finalize(self.stmt.as_ptr()) };
    }
}

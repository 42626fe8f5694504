//! A transaction's start and end: opening the engine transaction, committing or rolling it
//! back with its DDL, failing a block, letting go of locks.

use super::{Session, TransactionStatus};
use crate::error::SqlResult;
use crate::types::now_micros;

impl Session {
    pub(super) fn fail_block(&mut self) {
        if self.status == TransactionStatus::InBlock {
            // With a savepoint, the transaction stays open for ROLLBACK TO to return to.
            if self.savepoints.is_empty() {
                self.abandon();
            }
            self.status = TransactionStatus::Failed;
        }
    }

    /// Rolls back the engine transaction and any DDL, and releases the schema lock.
    pub(super) fn abandon(&mut self) {
        if self.engine_open {
            let _ = self.worker.rollback();
            self.engine_open = false;
        }
        self.savepoints.clear();
        self.undo_ddl();
        self.drop_deferred();
        self.requeue_orphans(false);
        self.release_locks();
    }

    /// Drops the engine tables of DDL undone by a rollback to a savepoint, once the engine
    /// transaction has ended.
    pub(super) fn drop_deferred(&mut self) {
        for engine in std::mem::take(&mut self.drop_at_end) {
            let _ = self.db.db.drop_table(&engine);
        }
    }

    pub(super) fn release_locks(&mut self) {
        // Outside a transaction the session sees the newest catalog.
        self.as_of = u64::MAX;
        let held = self.row_locks_held.get_mut();
        if !held.is_empty() {
            self.db.row_locks.release_all(self.id, held);
        }
        if self.holds_exclusive {
            self.db.schema_lock.unlock_exclusive(self.id);
            self.holds_exclusive = false;
        }
        if self.holds_shared {
            self.db.schema_lock.unlock_shared();
            self.holds_shared = false;
        }
    }

    /// Opens the engine transaction (and takes the schema lock) if not open yet.
    pub(crate) fn ensure_transaction(&mut self) -> SqlResult<()> {
        if !self.holds_shared {
            self.db.schema_lock.lock_shared(self.id)?;
            self.holds_shared = true;
        }
        if !self.engine_open {
            self.worker.begin(self.db.engine_isolation(self.isolation()))?;
            self.engine_open = true;
            self.txn_started = now_micros();
            crate::types::set_transaction_start(self.id, Some(self.txn_started));
            self.as_of = self.db.catalog_version.load(std::sync::atomic::Ordering::Acquire);
            if !self.savepoints.is_empty() {
                self.open_savepoints()?;
            }
        }
        Ok(())
    }

    /// Ends the transaction: commit or roll back the engine transaction, finish DDL.
    pub(super) fn finish(&mut self, commit: bool) -> SqlResult<()> {
        crate::types::set_transaction_start(self.id, None);
        self.savepoints.clear();
        let mut result = if commit && self.engine_open {
            self.engine_open = false;
            match self.commit_engine() {
                Ok(info) => {
                    self.last_commit = info;
                    Ok(())
                }
                Err(error) => Err(error),
            }
        } else {
            if self.engine_open {
                let _ = self.worker.rollback();
                self.engine_open = false;
            }
            Ok(())
        };
        if !self.orphans_taken.is_empty() {
            self.requeue_orphans(commit && result.is_ok());
        }
        match (&result, commit) {
            // A transaction without DDL or sequence reservations (the common case) has no
            // catalog rows to log and no engine tables to drop.
            (Ok(()), true) if self.catalog_rows.is_empty() && self.drop_at_commit.is_empty() => {
                self.undo.clear();
            }
            (Ok(()), true) => {
                self.undo.clear();
                // With durability off, the catalog rows it wrote go to the catalog log now:
                // nothing else would keep them. Failing (a full disk), the DDL is in doubt,
                // as a commit the log could not write is.
                let rows = std::mem::take(&mut self.catalog_rows);
                let logged = self.db.log_catalog_rows(&self.last_commit, &rows);
                // The engine tables the commit stopped naming go only once it is durable,
                // whatever `synchronous_commit` says: an engine drop is on disk at once, and a
                // crash before the commit's epoch would leave the catalog row that names the
                // table without it (tests/crash_points.rs). If the log failed, they stay, and
                // the next open drops whichever generation the catalog does not name.
                let drops = std::mem::take(&mut self.drop_at_commit);
                if logged.is_ok() && !drops.is_empty() && self.worker.wait_durable().is_ok() {
                    for engine in drops {
                        let _ = self.db.db.drop_table(&engine);
                    }
                }
                if let Err(error) = logged {
                    result = Err(error);
                }
            }
            _ => self.undo_ddl(),
        }
        if !self.drop_at_end.is_empty() {
            self.drop_deferred();
        }
        self.release_locks();
        self.txn_isolation = None;
        self.read_only = None;
        self.locking_read = false;
        if result.is_ok()
            && commit
            && self.wait_durable
            && self.synchronous_commit
            && self.last_commit.epoch.0 > 0
        {
            self.worker.wait_durable()?;
        }
        result
    }
}

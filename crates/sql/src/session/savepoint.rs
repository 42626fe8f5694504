//! `SAVEPOINT`, `ROLLBACK TO SAVEPOINT` and `RELEASE SAVEPOINT`, as PostgreSQL has them:
//! savepoints only inside a transaction block, names that may repeat (the newest counts),
//! ROLLBACK TO keeping its savepoint and forgetting later ones, RELEASE forgetting its own and
//! later ones, and ROLLBACK TO as the way out of a failed block.
//!
//! A savepoint is the engine's (`Txn::savepoint`: the rows written since are undone, what was
//! read stays in the read set) plus the session's DDL state at that point: DDL since is undone
//! in the catalog as a rollback would, and the engine tables it created are dropped when the
//! transaction ends (the engine transaction may still hold their records). A block with a
//! savepoint keeps its engine transaction when a statement fails, so that ROLLBACK TO can
//! return to it; one that concurrency control aborted (40001, 40P01) cannot return and can
//! only roll back. What is not undone, as in PostgreSQL: sequence values handed out; unlike
//! PostgreSQL, row locks taken since (`FOR UPDATE`) are kept until the transaction ends, and a
//! SET since is not undone.

use super::{Session, TransactionStatus};
use crate::error::{SqlError, SqlResult};
use crate::session::Outcome;

/// A savepoint of the open transaction block.
#[derive(Debug)]
pub(crate) struct SavepointState {
    name: String,
    /// The engine's savepoint; `None` until the engine transaction opens (it then takes one
    /// at its start for each).
    pub(crate) engine: Option<engram_engine::Savepoint>,
    /// The DDL state: lengths of `undo` and `orphans_taken`, copies of the rest.
    undo: usize,
    orphans: usize,
    catalog_rows: Vec<(Vec<u8>, Option<Vec<u8>>)>,
    pending: Vec<crate::catalog::Pending>,
    drop_at_commit: Vec<String>,
}

impl Session {
    fn in_block(&self, what: &str) -> SqlResult<()> {
        if self.status == TransactionStatus::Idle || self.implicit {
            return Err(SqlError::new(
                "25P01",
                format!("{what} can only be used in transaction blocks"),
            ));
        }
        Ok(())
    }

    /// The position of the newest savepoint called `name`.
    fn find_savepoint(&self, name: &str) -> SqlResult<usize> {
        self.savepoints
            .iter()
            .rposition(|savepoint| savepoint.name == name)
            .ok_or_else(|| SqlError::new("3B001", format!("savepoint \"{name}\" does not exist")))
    }

    pub(super) fn savepoint(&mut self, name: &str) -> SqlResult<Outcome> {
        self.in_block("SAVEPOINT")?;
        let engine = match self.engine_open {
            true => Some(self.worker.txn()?.savepoint()?),
            false => None,
        };
        self.savepoints.push(SavepointState {
            name: name.to_string(),
            engine,
            undo: self.undo.len(),
            orphans: self.orphans_taken.len(),
            catalog_rows: self.catalog_rows.clone(),
            pending: self.pending.clone(),
            drop_at_commit: self.drop_at_commit.clone(),
        });
        Ok(Outcome::Command { tag: "SAVEPOINT".into() })
    }

    pub(super) fn release_savepoint(&mut self, name: &str) -> SqlResult<Outcome> {
        self.in_block("RELEASE SAVEPOINT")?;
        let at = self.find_savepoint(name)?;
        if let Some(engine) = self.savepoints[at].engine {
            self.worker.txn()?.release_savepoint(engine)?;
        }
        self.savepoints.truncate(at);
        Ok(Outcome::Command { tag: "RELEASE".into() })
    }

    pub(super) fn rollback_to_savepoint(&mut self, name: &str) -> SqlResult<Outcome> {
        self.in_block("ROLLBACK TO SAVEPOINT")?;
        let at = self.find_savepoint(name)?;
        self.savepoints.truncate(at + 1);
        if self.engine_open
            && let Some(engine) = self.savepoints[at].engine
        {
            // An aborted engine transaction answers with its abort (40001): the block stays
            // failed, and only ROLLBACK ends it.
            self.worker.txn()?.rollback_to_savepoint(engine)?;
        }
        let savepoint = &mut self.savepoints[at];
        self.catalog_rows = savepoint.catalog_rows.clone();
        self.pending = savepoint.pending.clone();
        self.drop_at_commit = savepoint.drop_at_commit.clone();
        let (undo, orphans) = (savepoint.undo, savepoint.orphans);
        if self.orphans_taken.len() > orphans {
            // Their DROP is undone: the next DDL statement takes them again.
            let requeued = self.orphans_taken.split_off(orphans);
            self.db.temp_orphans.lock().extend(requeued);
        }
        self.undo_ddl_to(undo, true);
        self.status = TransactionStatus::InBlock;
        Ok(Outcome::Command { tag: "ROLLBACK".into() })
    }

    /// Takes the engine savepoints of the block's savepoints taken before its engine
    /// transaction opened: all at its start.
    pub(super) fn open_savepoints(&mut self) -> SqlResult<()> {
        for index in 0..self.savepoints.len() {
            if self.savepoints[index].engine.is_none() {
                self.savepoints[index].engine = Some(self.worker.txn()?.savepoint()?);
            }
        }
        Ok(())
    }
}

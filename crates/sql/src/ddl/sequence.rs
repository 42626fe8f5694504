//! CREATE SEQUENCE, ALTER SEQUENCE and DROP SEQUENCE, and the sequences SERIAL and identity
//! columns own. A sequence's definition is a catalog row (`sequence:NAME`, written in the DDL
//! transaction, undone with it); its values are not transactional and are reserved in blocks
//! (`catalog::Sequence`), as PostgreSQL's are logged ahead.

use crate::ast::{CreateSequence, SequenceOption};
use crate::catalog::{Sequence, SequenceDef, SequenceOptions};
use crate::error::{SqlError, SqlResult};
use crate::session::{Session, Undo};
use crate::types::Type;
use std::sync::Arc;

/// The bounds of a sequence of type `ty`.
fn type_range(ty: Type) -> (i64, i64) {
    match ty {
        Type::Int2 => (i64::from(i16::MIN), i64::from(i16::MAX)),
        Type::Int4 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        _ => (i64::MIN, i64::MAX),
    }
}

/// Options from CREATE or ALTER SEQUENCE over `base` (PostgreSQL's rules: an ascending
/// sequence runs from 1 to the type's maximum, a descending one from the type's minimum to
/// -1, and starts at its minimum or maximum).
pub(crate) fn sequence_options(
    name: &str,
    ty: Type,
    base: Option<SequenceOptions>,
    options: &[SequenceOption],
) -> SqlResult<(SequenceOptions, Option<Option<i64>>)> {
    let (type_min, type_max) = type_range(ty);
    let mut increment = base.map_or(1, |b| b.increment);
    let (mut min, mut max, mut start, mut cycle) =
        (None, None, None, base.is_some_and(|b| b.cycle));
    let mut restart = None;
    for option in options {
        match option {
            SequenceOption::Increment(n) => increment = *n,
            SequenceOption::Min(n) => min = Some(*n),
            SequenceOption::Max(n) => max = Some(*n),
            SequenceOption::Start(n) => start = Some(*n),
            SequenceOption::Restart(n) => restart = Some(*n),
            SequenceOption::Cycle(on) => cycle = *on,
            SequenceOption::Cache(n) if *n < 1 => {
                return Err(SqlError::new(
                    "22023",
                    format!("CACHE ({n}) must be greater than zero"),
                ));
            }
            SequenceOption::Cache(_) => {}
        }
    }
    if increment == 0 {
        return Err(SqlError::new("22023", "INCREMENT must not be zero"));
    }
    let ascending = increment > 0;
    // `NO MINVALUE` / `NO MAXVALUE` (`Some(None)`) and an absent option take the default;
    // ALTER keeps the old bound where nothing is said.
    let default_min = if ascending { 1 } else { type_min };
    let default_max = if ascending { type_max } else { -1 };
    let min = match min {
        Some(Some(n)) => n,
        Some(None) => default_min,
        None => base.map_or(default_min, |b| b.min),
    };
    let max = match max {
        Some(Some(n)) => n,
        Some(None) => default_max,
        None => base.map_or(default_max, |b| b.max),
    };
    for (bound, value) in [("MINVALUE", min), ("MAXVALUE", max)] {
        if value < type_min || value > type_max {
            return Err(SqlError::new(
                "22023",
                format!("{bound} ({value}) is out of range for sequence data type {}", ty.name()),
            ));
        }
    }
    if min >= max {
        return Err(SqlError::new(
            "22023",
            format!("MINVALUE ({min}) must be less than MAXVALUE ({max})"),
        ));
    }
    let start =
        start.unwrap_or_else(|| base.map_or(if ascending { min } else { max }, |b| b.start));
    if start < min {
        return Err(SqlError::new(
            "22023",
            format!("START value ({start}) cannot be less than MINVALUE ({min})"),
        ));
    }
    if start > max {
        return Err(SqlError::new(
            "22023",
            format!("START value ({start}) cannot be greater than MAXVALUE ({max})"),
        ));
    }
    if let Some(Some(value)) = restart
        && (value < min || value > max)
    {
        return Err(SqlError::new(
            "22023",
            format!(
                "RESTART value ({value}) cannot be outside MINVALUE ({min}) and MAXVALUE ({max}) of sequence \"{name}\""
            ),
        ));
    }
    Ok((SequenceOptions { increment, min, max, start, cycle }, restart))
}

impl Session {
    pub(super) fn create_sequence(&mut self, create: &CreateSequence) -> SqlResult<String> {
        if self.relation_exists(&create.name) {
            if create.if_not_exists {
                self.notice(format!("relation \"{}\" already exists, skipping", create.name));
                return Ok("CREATE SEQUENCE".into());
            }
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{}\" already exists", create.name),
            ));
        }
        let ty = create.ty.unwrap_or(Type::Int8);
        if !ty.is_integer() {
            return Err(SqlError::new(
                "22023",
                "sequence type must be smallint, integer, or bigint",
            ));
        }
        let (options, _) = sequence_options(&create.name, ty, None, &create.options)?;
        if let Some((table, column)) = &create.owned_by {
            let info = self.ddl_table(table)?;
            if info.schema.column(column).is_none() {
                return Err(SqlError::undefined_column(column));
            }
        }
        let def = SequenceDef {
            name: create.name.clone(),
            key: self.sequence_key(&create.name),
            ty,
            options,
            owned_by: create.owned_by.clone(),
        };
        self.put_sequence(&create.name, Some(Arc::new(def)))?;
        Ok("CREATE SEQUENCE".into())
    }

    /// `ALTER SEQUENCE name options`: new options take effect at once; `RESTART` sets where
    /// it goes on (not transactional, as the values are not).
    pub(super) fn alter_sequence(
        &mut self,
        name: &str,
        if_exists: bool,
        ty: Option<Type>,
        options: &[SequenceOption],
        rename: Option<&str>,
    ) -> SqlResult<String> {
        let Some(old) = self.db.catalog.read().sequence_defs.get(name).cloned() else {
            if if_exists {
                self.notice(format!("relation \"{name}\" does not exist, skipping"));
                return Ok("ALTER SEQUENCE".into());
            }
            return Err(SqlError::new("42P01", format!("relation \"{name}\" does not exist")));
        };
        if let Some(new_name) = rename {
            if self.relation_exists(new_name) {
                return Err(SqlError::new(
                    "42P07",
                    format!("relation \"{new_name}\" already exists"),
                ));
            }
            let def = SequenceDef { name: new_name.to_string(), ..(*old).clone() };
            self.put_sequence(name, None)?;
            self.put_sequence(new_name, Some(Arc::new(def)))?;
            return Ok("ALTER SEQUENCE".into());
        }
        // A new type moves the bounds that were the old type's to the new type's.
        let mut base = old.options;
        let new_ty = ty.unwrap_or(old.ty);
        if new_ty != old.ty {
            let ((old_min, old_max), (new_min, new_max)) = (type_range(old.ty), type_range(new_ty));
            if base.max == old_max {
                base.max = new_max;
            }
            if base.min == old_min {
                base.min = new_min;
            }
        }
        let (new, restart) = sequence_options(name, new_ty, Some(base), options)?;
        let def = SequenceDef { options: new, ty: new_ty, ..(*old).clone() };
        self.put_sequence(name, Some(Arc::new(def)))?;
        let sequence = self.db.catalog.read().named_sequence(name)?.1;
        let db = Arc::clone(&self.db);
        let reserve = |sequence: &Sequence, limit: i64| db.reserve(sequence, limit);
        sequence.state.lock().options = new;
        if let Some(at) = restart {
            sequence.set_value(name, at.unwrap_or(new.start), false, reserve)?;
        }
        Ok("ALTER SEQUENCE".into())
    }

    pub(super) fn drop_sequences(
        &mut self,
        names: &[String],
        if_exists: bool,
        cascade: bool,
    ) -> SqlResult<String> {
        for name in names {
            let def = self.db.catalog.read().sequence_defs.get(name).cloned();
            let Some(def) = def else {
                if if_exists {
                    self.notice(format!("sequence \"{name}\" does not exist, skipping"));
                    continue;
                }
                return Err(SqlError::new("42P01", format!("sequence \"{name}\" does not exist")));
            };
            if let Some((table, column)) = &def.owned_by
                && !cascade
                && self.column_uses_sequence(table, column, &def.key)
            {
                let mut error = SqlError::new(
                    "2BP01",
                    format!("cannot drop sequence {name} because other objects depend on it"),
                );
                error.detail = Some(format!(
                    "default value for column {column} of table {table} depends on sequence {name}"
                ));
                return Err(error);
            }
            self.put_sequence(name, None)?;
        }
        Ok("DROP SEQUENCE".into())
    }

    /// Whether the column's default takes values from the sequence of reservation key `key`.
    fn column_uses_sequence(&self, table: &str, column: &str, key: &str) -> bool {
        let catalog = self.db.catalog.read();
        let Some(info) = catalog.tables.get(table) else { return false };
        info.schema
            .column(column)
            .is_some_and(|at| info.schema.columns[at].sequence.as_deref() == Some(key))
    }

    /// The sequence a new SERIAL or identity column `column` of `table` owns: named
    /// `table_column_seq` (with a number after it if that name is taken), its key returned.
    pub(crate) fn create_owned_sequence(
        &mut self,
        table: &str,
        column: &str,
        ty: Type,
        options: &[SequenceOption],
    ) -> SqlResult<String> {
        let base = format!("{table}_{column}_seq");
        let mut name = base.clone();
        let mut suffix = 0;
        while self.relation_exists(&name)
            || self.db.catalog.read().sequence_defs.contains_key(&name)
        {
            suffix += 1;
            name = format!("{base}{suffix}");
        }
        let (options, _) = sequence_options(&name, ty, None, options)?;
        let key = self.sequence_key(&name);
        let def = SequenceDef {
            name: name.clone(),
            key: key.clone(),
            ty,
            options,
            owned_by: Some((table.to_string(), column.to_string())),
        };
        self.put_sequence(&name, Some(Arc::new(def)))?;
        Ok(key)
    }

    /// Follows a renamed table (`to`) or column (`column`: from, to) with the sequences its
    /// columns own.
    pub(crate) fn move_sequence_owner(
        &mut self,
        table: &str,
        to: &str,
        column: Option<(&String, &String)>,
    ) -> SqlResult<()> {
        let owned: Vec<Arc<SequenceDef>> = self
            .db
            .catalog
            .read()
            .sequence_defs
            .values()
            .filter(|def| {
                def.owned_by
                    .as_ref()
                    .is_some_and(|(t, c)| t == table && column.is_none_or(|(from, _)| c == from))
            })
            .cloned()
            .collect();
        for def in owned {
            let (_, owned_column) = def.owned_by.clone().unwrap_or_default();
            let owned_column = column.map_or(owned_column, |(_, to)| to.clone());
            let moved =
                SequenceDef { owned_by: Some((to.to_string(), owned_column)), ..(*def).clone() };
            self.put_sequence(&def.name, Some(Arc::new(moved)))?;
        }
        Ok(())
    }

    /// Drops the sequences `table`'s columns own (with the table).
    pub(crate) fn drop_owned_sequences(&mut self, table: &str) -> SqlResult<()> {
        let owned: Vec<String> = self
            .db
            .catalog
            .read()
            .sequence_defs
            .values()
            .filter(|def| def.owned_by.as_ref().is_some_and(|(t, _)| t == table))
            .map(|def| def.name.clone())
            .collect();
        for name in owned {
            self.put_sequence(&name, None)?;
        }
        Ok(())
    }

    /// A new sequence's reservation key: its name and a generation no other object had.
    fn sequence_key(&self, name: &str) -> String {
        format!("@{}", self.db.catalog.write().next_engine_name(name))
    }

    /// Writes (or with `None` removes) a sequence's catalog row and entry. A definition with a
    /// key not seen before (a sequence just created: keys are unique) starts its values anew.
    fn put_sequence(&mut self, name: &str, def: Option<Arc<SequenceDef>>) -> SqlResult<()> {
        self.write_catalog_json(format!("sequence:{name}"), def.as_deref())?;
        let mut catalog = self.db.catalog.write();
        catalog.version += 1;
        if let Some(def) = &def {
            catalog.sequence(&def.key, def.options);
        }
        let previous = match def {
            Some(def) => catalog.sequence_defs.insert(name.to_string(), def),
            None => catalog.sequence_defs.remove(name),
        };
        self.db.catalog_version.store(catalog.version, std::sync::atomic::Ordering::Release);
        self.undo.push(Undo::Sequence { name: name.to_string(), previous });
        Ok(())
    }
}

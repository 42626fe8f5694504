//! `COMMENT ON TABLE | COLUMN | VIEW | SEQUENCE | INDEX name IS 'text' | NULL`. A comment is a
//! catalog row (`comment:table:t`, `comment:column:t.c`, ..., its text as JSON) written in the
//! DDL's transaction like any catalog change, and an entry of `Catalog::comments`, which
//! `pg_description`, `obj_description` and `col_description` read. Dropping a table drops its
//! comments and its columns'.

use crate::ast::CommentKind;
use crate::error::{SqlError, SqlResult};
use crate::session::{Session, Undo};

impl Session {
    pub(super) fn comment_on(
        &mut self,
        kind: CommentKind,
        name: &str,
        text: Option<&str>,
    ) -> SqlResult<String> {
        {
            let catalog = self.db.catalog.read();
            let missing =
                |what: &str| SqlError::new("42P01", format!("{what} \"{name}\" does not exist"));
            match kind {
                CommentKind::Table => {
                    catalog.tables.get(name).ok_or_else(|| missing("relation"))?;
                }
                CommentKind::View => {
                    catalog.views.get(name).ok_or_else(|| missing("relation"))?;
                }
                CommentKind::Sequence => {
                    catalog.sequence_defs.get(name).ok_or_else(|| missing("relation"))?;
                }
                CommentKind::Index => {
                    if catalog.index_table(name).is_none() {
                        return Err(SqlError::new(
                            "42P01",
                            format!("relation \"{name}\" does not exist"),
                        ));
                    }
                }
                CommentKind::Column => {
                    let Some((table, column)) = name.rsplit_once('.') else {
                        return Err(SqlError::syntax("column name must be qualified"));
                    };
                    let table = catalog.table(table)?;
                    if table.schema.column(column).is_none() {
                        return Err(SqlError::new(
                            "42703",
                            format!(
                                "column \"{column}\" of relation \"{}\" does not exist",
                                table.schema.name
                            ),
                        ));
                    }
                }
            }
        }
        // An empty comment removes it, as in PostgreSQL.
        let text = text.filter(|text| !text.is_empty());
        self.put_comment(format!("{}:{name}", kind.key()), text.map(str::to_string))?;
        Ok("COMMENT".into())
    }

    /// Writes (or with `None` removes) the comment `key`'s catalog row and entry.
    fn put_comment(&mut self, key: String, text: Option<String>) -> SqlResult<()> {
        self.write_catalog_json(format!("comment:{key}"), text.as_ref())?;
        let mut catalog = self.db.catalog.write();
        catalog.version += 1;
        let previous = match text {
            Some(text) => catalog.comments.insert(key.clone(), text),
            None => catalog.comments.remove(&key),
        };
        self.db.catalog_version.store(catalog.version, std::sync::atomic::Ordering::Release);
        self.undo.push(Undo::Comment { key, previous });
        Ok(())
    }

    /// Removes the comments on table `name` and on its columns (it was dropped).
    pub(super) fn forget_comments(&mut self, name: &str) -> SqlResult<()> {
        let column_prefix = format!("column:{name}.");
        let keys: Vec<String> = self
            .db
            .catalog
            .read()
            .comments
            .keys()
            .filter(|key| {
                key.strip_prefix("table:") == Some(name) || key.starts_with(&column_prefix)
            })
            .cloned()
            .collect();
        for key in keys {
            self.put_comment(key, None)?;
        }
        Ok(())
    }
}

//! CREATE TABLE and ALTER TABLE: column definitions (types, SERIAL, identity, constraints)
//! and ALTER TABLE's actions, from sqlparser's tree.

use super::*;

pub(super) fn alter_action(operation: sp::AlterTableOperation) -> SqlResult<AlterAction> {
    use sp::AlterTableOperation as O;
    let columns = |columns: &[sp::IndexColumn]| -> SqlResult<Vec<String>> {
        columns.iter().map(|c| index_column(&c.column)).collect()
    };
    Ok(match operation {
        O::AddColumn { if_not_exists, column_def, column_position: None, .. } => {
            let mut foreign_keys = Vec::new();
            let mut checks = Vec::new();
            let column = column_def_from(column_def, &mut foreign_keys, &mut checks)?;
            AlterAction::AddColumn {
                column,
                if_not_exists,
                foreign_key: foreign_keys.pop(),
                checks,
            }
        }
        O::AddConstraint { constraint: sp::TableConstraint::Check(check), not_valid: false } => {
            AlterAction::AddCheck(check_from(check, None)?)
        }
        O::AddConstraint { constraint: sp::TableConstraint::ForeignKey(fk), not_valid: false } => {
            AlterAction::AddForeignKey(foreign_key_from(fk)?)
        }
        O::DropColumn { column_names, if_exists, drop_behavior, .. } => {
            let cascade = matches!(drop_behavior, Some(sp::DropBehavior::Cascade));
            match column_names.as_slice() {
                [name] => AlterAction::DropColumn { name: ident(name), if_exists, cascade },
                _ => return Err(SqlError::syntax("DROP COLUMN names one column")),
            }
        }
        O::RenameColumn { old_column_name, new_column_name } => {
            AlterAction::RenameColumn { from: ident(&old_column_name), to: ident(&new_column_name) }
        }
        O::RenameTable { table_name } => {
            let (sp::RenameTableNameKind::To(name) | sp::RenameTableNameKind::As(name)) =
                table_name;
            AlterAction::RenameTable { to: object_name(&name)? }
        }
        O::AlterColumn { column_name, op } => {
            let column = ident(&column_name);
            match op {
                sp::AlterColumnOperation::SetNotNull => {
                    AlterAction::SetNotNull { column, not_null: true }
                }
                sp::AlterColumnOperation::DropNotNull => {
                    AlterAction::SetNotNull { column, not_null: false }
                }
                sp::AlterColumnOperation::SetDefault { value } => {
                    expr_from(value.clone())?;
                    AlterAction::SetDefault { column, default: Some(value.to_string()) }
                }
                sp::AlterColumnOperation::DropDefault => {
                    AlterAction::SetDefault { column, default: None }
                }
                sp::AlterColumnOperation::SetDataType { data_type, using: None, .. } => {
                    AlterAction::SetType { column, ty: type_from(&data_type)? }
                }
                sp::AlterColumnOperation::SetDataType { using: Some(_), .. } => {
                    return Err(SqlError::unsupported("ALTER COLUMN ... TYPE ... USING"));
                }
                other => return Err(SqlError::unsupported(format!("ALTER COLUMN ... {other}"))),
            }
        }
        O::AddConstraint { constraint: sp::TableConstraint::PrimaryKey(pk), not_valid: false } => {
            AlterAction::AddPrimaryKey { columns: columns(&pk.columns)? }
        }
        O::AddConstraint { constraint: sp::TableConstraint::Unique(unique), not_valid: false } => {
            AlterAction::AddUnique {
                name: unique.name.as_ref().map(ident),
                columns: columns(&unique.columns)?,
            }
        }
        O::DropConstraint { if_exists, name, drop_behavior } => {
            if matches!(drop_behavior, Some(sp::DropBehavior::Cascade)) {
                return Err(SqlError::unsupported("DROP CONSTRAINT ... CASCADE"));
            }
            AlterAction::DropConstraint { name: ident(&name), if_exists }
        }
        other => return Err(SqlError::unsupported(format!("ALTER TABLE ... {other}"))),
    })
}

/// A CHECK constraint (of `column`, if written as a column's).
fn check_from(check: sp::CheckConstraint, column: Option<&str>) -> SqlResult<CheckDef> {
    if check.enforced == Some(false) {
        return Err(SqlError::unsupported("NOT ENFORCED"));
    }
    // Converted now so that an unsupported expression fails here; the catalog keeps the text.
    expr_from((*check.expr).clone())?;
    Ok(CheckDef {
        name: check.name.as_ref().map(ident),
        expr: check.expr.to_string(),
        column: column.map(str::to_string),
    })
}

/// A foreign key constraint.
fn foreign_key_from(fk: sp::ForeignKeyConstraint) -> SqlResult<ForeignKeyDef> {
    let action = |action: Option<sp::ReferentialAction>| match action {
        None | Some(sp::ReferentialAction::NoAction) => FkAction::NoAction,
        Some(sp::ReferentialAction::Restrict) => FkAction::Restrict,
        Some(sp::ReferentialAction::Cascade) => FkAction::Cascade,
        Some(sp::ReferentialAction::SetNull) => FkAction::SetNull,
        Some(sp::ReferentialAction::SetDefault) => FkAction::SetDefault,
    };
    if matches!(fk.match_kind, Some(sp::ConstraintReferenceMatchKind::Partial)) {
        return Err(SqlError::unsupported("MATCH PARTIAL"));
    }
    let characteristics = fk.characteristics.unwrap_or_default();
    if characteristics.enforced == Some(false) {
        return Err(SqlError::unsupported("NOT ENFORCED"));
    }
    Ok(ForeignKeyDef {
        name: fk.name.as_ref().map(ident),
        columns: fk.columns.iter().map(ident).collect(),
        table: object_name(&fk.foreign_table)?,
        ref_columns: fk.referred_columns.iter().map(ident).collect(),
        on_delete: action(fk.on_delete),
        on_update: action(fk.on_update),
        deferrable: characteristics.deferrable == Some(true)
            || characteristics.initially == Some(sp::DeferrableInitial::Deferred),
        match_full: matches!(fk.match_kind, Some(sp::ConstraintReferenceMatchKind::Full)),
    })
}

/// A column definition of CREATE TABLE or ALTER TABLE ... ADD COLUMN; a `REFERENCES` goes to
/// `foreign_keys`.
fn column_def_from(
    column: sp::ColumnDef,
    foreign_keys: &mut Vec<ForeignKeyDef>,
    checks: &mut Vec<CheckDef>,
) -> SqlResult<ColumnDef> {
    let (ty, serial) = match &column.data_type {
        sp::DataType::Custom(name, modifiers) if modifiers.is_empty() => {
            match object_name(name)?.as_str() {
                "serial" | "serial4" => (Type::Int4, true),
                "bigserial" | "serial8" => (Type::Int8, true),
                "smallserial" | "serial2" => (Type::Int2, true),
                _ => (type_from(&column.data_type)?, false),
            }
        }
        other => (type_from(other)?, false),
    };
    let mut def = ColumnDef {
        name: ident(&column.name),
        ty,
        not_null: serial,
        default: None,
        serial,
        identity: None,
        primary: false,
        unique: false,
    };
    for option in column.options {
        match option.option {
            sp::ColumnOption::Null => def.not_null = false,
            sp::ColumnOption::NotNull => def.not_null = true,
            sp::ColumnOption::Default(expr) => {
                // Check now that it converts; the catalog keeps the text.
                expr_from(expr.clone())?;
                def.default = Some(expr.to_string());
            }
            sp::ColumnOption::PrimaryKey(_) => def.primary = true,
            sp::ColumnOption::Unique(_) => def.unique = true,
            sp::ColumnOption::Check(check) => {
                let mut check = check_from(check, Some(&def.name))?;
                check.name = check.name.or_else(|| option.name.as_ref().map(ident));
                checks.push(check);
            }
            sp::ColumnOption::ForeignKey(fk) => {
                let mut fk = foreign_key_from(fk)?;
                fk.name = fk.name.or_else(|| option.name.as_ref().map(ident));
                fk.columns = vec![def.name.clone()];
                foreign_keys.push(fk);
            }
            sp::ColumnOption::Generated {
                generated_as: kind @ (sp::GeneratedAs::Always | sp::GeneratedAs::ByDefault),
                sequence_options,
                generation_expr: None,
                ..
            } => {
                if !def.ty.is_integer() {
                    return Err(SqlError::new(
                        "22023",
                        "identity column type must be smallint, integer, or bigint",
                    ));
                }
                let kind = match kind {
                    sp::GeneratedAs::Always => crate::ast::Identity::Always,
                    _ => crate::ast::Identity::ByDefault,
                };
                let options = sequence::options_from(sequence_options.as_deref().unwrap_or(&[]))?;
                def.identity = Some((kind, options));
                def.serial = true;
                def.not_null = true;
            }
            other => return Err(SqlError::unsupported(format!("the column option {other}"))),
        }
    }
    Ok(def)
}

pub(super) fn create_table_from(create: sp::CreateTable) -> SqlResult<CreateTable> {
    if create.on_commit.is_some_and(|on| !matches!(on, sp::OnCommit::PreserveRows)) {
        return Err(SqlError::unsupported("ON COMMIT DROP or DELETE ROWS"));
    }
    if let Some(query) = create.query {
        let name = object_name(&create.name)?;
        let columns = create
            .columns
            .iter()
            .map(|c| ColumnDef {
                name: ident(&c.name),
                ty: Type::Unknown,
                not_null: false,
                default: None,
                serial: false,
                identity: None,
                primary: false,
                unique: false,
            })
            .collect();
        return Ok(CreateTable {
            name,
            if_not_exists: create.if_not_exists,
            temporary: create.temporary,
            columns,
            primary_key: Vec::new(),
            uniques: Vec::new(),
            foreign_keys: Vec::new(),
            checks: Vec::new(),
            query: Some(Box::new(query_from(*query)?)),
        });
    }
    if create.like.is_some() || create.inherits.is_some() || create.partition_by.is_some() {
        return Err(SqlError::unsupported("CREATE TABLE with LIKE, INHERITS or PARTITION BY"));
    }
    let mut table = CreateTable {
        name: object_name(&create.name)?,
        if_not_exists: create.if_not_exists,
        temporary: create.temporary,
        columns: Vec::new(),
        primary_key: Vec::new(),
        uniques: Vec::new(),
        foreign_keys: Vec::new(),
        checks: Vec::new(),
        query: None,
    };
    for column in create.columns {
        table.columns.push(column_def_from(column, &mut table.foreign_keys, &mut table.checks)?);
    }
    for constraint in create.constraints {
        match constraint {
            sp::TableConstraint::PrimaryKey(pk) => {
                if !table.primary_key.is_empty() {
                    return Err(SqlError::new("42P16", "multiple primary keys are not allowed"));
                }
                table.primary_key =
                    pk.columns.iter().map(|c| index_column(&c.column)).collect::<SqlResult<_>>()?;
            }
            sp::TableConstraint::Unique(unique) => table.uniques.push(
                unique.columns.iter().map(|c| index_column(&c.column)).collect::<SqlResult<_>>()?,
            ),
            sp::TableConstraint::ForeignKey(fk) => table.foreign_keys.push(foreign_key_from(fk)?),
            sp::TableConstraint::Check(check) => table.checks.push(check_from(check, None)?),
            other => return Err(SqlError::unsupported(format!("the constraint {other}"))),
        }
    }
    Ok(table)
}

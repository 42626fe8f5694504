"""SQLAlchemy 2 ORM against engram serve: declarative models with a relationship, create_all
and drop_all, sessions, begin_nested (savepoints) around a failing flush, joins, grouping,
subqueries, cascading deletes, a JSONB column (its operators and a mutation of a document)."""
import datetime
import decimal
import os
from typing import List, Optional

from sqlalchemy import DateTime, ForeignKey, Numeric, String, create_engine, func, select
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

url = f"postgresql+psycopg://postgres@{os.environ.get('PGHOST', '127.0.0.1')}:{os.environ['PGPORT']}/engram"
engine = create_engine(url)


class Base(DeclarativeBase):
    pass


class User(Base):
    __tablename__ = "sa_users"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(50), unique=True)
    fullname: Mapped[Optional[str]]
    prefs: Mapped[Optional[dict]] = mapped_column(JSONB)
    created: Mapped[datetime.datetime] = mapped_column(DateTime(timezone=True), server_default=func.now())
    addresses: Mapped[List["Address"]] = relationship(back_populates="user", cascade="all, delete-orphan")


class Address(Base):
    __tablename__ = "sa_addresses"
    id: Mapped[int] = mapped_column(primary_key=True)
    email: Mapped[str]
    balance: Mapped[decimal.Decimal] = mapped_column(Numeric(10, 2), default=0)
    user_id: Mapped[int] = mapped_column(ForeignKey("sa_users.id"))
    user: Mapped["User"] = relationship(back_populates="addresses")


Base.metadata.drop_all(engine)
Base.metadata.create_all(engine)
with Session(engine) as s:
    s.add_all([
        User(name="spongebob", fullname="Spongebob Squarepants", prefs={"theme": "dark", "langs": ["en"]},
             addresses=[Address(email="sb@example.org", balance=decimal.Decimal("1.50"))]),
        User(name="sandy", addresses=[Address(email="sandy@example.org"), Address(email="sandy@squirrel.org")]),
    ])
    s.commit()
with Session(engine) as s:
    sandy = s.execute(select(User).filter_by(name="sandy")).scalar_one()
    assert len(sandy.addresses) == 2
    assert sandy.created.tzinfo is not None
    # A failing flush inside begin_nested is undone to its savepoint; the session goes on.
    try:
        with s.begin_nested():
            s.add(User(name="sandy"))
            s.flush()
        raise AssertionError("a duplicate name was accepted")
    except IntegrityError:
        pass
    with s.begin_nested():
        s.add(User(name="patrick"))
    s.commit()
with Session(engine) as s:
    names = s.scalars(select(User.name).order_by(User.name)).all()
    assert names == ["patrick", "sandy", "spongebob"], names
    counts = s.execute(
        select(User.name, func.count(Address.id)).join(User.addresses).group_by(User.name).order_by(User.name)
    ).all()
    assert counts == [("sandy", 2), ("spongebob", 1)], counts
    squirrels = s.scalars(
        select(User.name).where(User.id.in_(select(Address.user_id).where(Address.email.like("%squirrel%"))))
    ).all()
    assert squirrels == ["sandy"], squirrels
    dark = s.scalars(select(User.name).where(User.prefs["theme"].astext == "dark")).all()
    assert dark == ["spongebob"], dark
    assert s.scalars(select(User.name).where(User.prefs.contains({"langs": ["en"]}))).all() == ["spongebob"]
    assert s.scalars(select(User.name).where(User.prefs.has_key("theme"))).all() == ["spongebob"]
    sponge = s.execute(select(User).filter_by(name="spongebob")).scalar_one()
    sponge.prefs = {**sponge.prefs, "theme": "light"}
    s.flush()
    assert s.scalar(select(User.prefs["theme"].astext).where(User.name == "spongebob")) == "light"
    total = s.scalar(select(func.sum(Address.balance)))
    assert total == decimal.Decimal("1.50"), total
    s.delete(s.scalars(select(User).filter_by(name="spongebob")).one())
    s.commit()
    assert s.scalar(select(func.count()).select_from(Address)) == 2
Base.metadata.drop_all(engine)
print("sqlalchemy ok")

"""Django against engram serve, after `manage.py migrate`: a model with a ForeignKey (CRUD, cascade),
nested transaction.atomic (savepoints), filters across joins, aggregates, auth users and groups."""
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
import django
django.setup()
from django.db import transaction, IntegrityError
from django.db.models import Count, Sum, Avg, Q, F, Max
from django.contrib.auth.models import User, Group, Permission
from app.models import Author, Book

Book.objects.all().delete(); Author.objects.all().delete()
a = Author.objects.create(name="Le Guin", born=datetime.date(1929, 10, 21))
b = Author.objects.create(name="Borges")
Book.objects.bulk_create([Book(author=a, title="The Dispossessed", pages=387), Book(author=a, title="Earthsea", pages=200), Book(author=b, title="Ficciones", pages=174)])
# nested atomic: the inner block fails and is rolled back to its savepoint
with transaction.atomic():
    Author.objects.create(name="Calvino")
    try:
        with transaction.atomic():
            Author.objects.create(name="Borges")
    except IntegrityError:
        pass
    Book.objects.create(author=Author.objects.get(name="Calvino"), title="Invisible Cities", pages=165)
assert Author.objects.count() == 3, Author.objects.count()
# joins, filters, aggregates
assert list(Book.objects.filter(author__name="Le Guin").order_by("title").values_list("title", flat=True)) == ["Earthsea", "The Dispossessed"]
counts = dict(Author.objects.annotate(n=Count("books")).values_list("name", "n"))
assert counts == {"Le Guin": 2, "Borges": 1, "Calvino": 1}, counts
agg = Book.objects.aggregate(total=Sum("pages"), mean=Avg("pages"), longest=Max("pages"))
assert agg["total"] == 926 and agg["longest"] == 387, agg
assert Book.objects.filter(Q(pages__gt=190) | Q(title__startswith="Fic")).count() == 3
Book.objects.filter(author=b).update(pages=F("pages") + 1)
assert Book.objects.get(title="Ficciones").pages == 175
assert Author.objects.filter(books__pages__gt=300).distinct().count() == 1
# cascade
a.delete()
assert Book.objects.count() == 2
# auth: users, groups, many-to-many
u = User.objects.create_user("alice", "a@example.com", "pw")
g = Group.objects.create(name="editors")
u.groups.add(g)
g.permissions.add(*Permission.objects.filter(codename__startswith="add_")[:3])
assert User.objects.filter(groups__name="editors").count() == 1
assert u.check_password("pw")
with transaction.atomic():
    sid = transaction.savepoint()
    User.objects.create_user("bob")
    transaction.savepoint_rollback(sid)
assert not User.objects.filter(username="bob").exists()
print("django ok")

"""Django's manage.py for the client test (`migrate` of the built-in apps and ours)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "settings")
from django.core.management import execute_from_command_line  # noqa: E402

execute_from_command_line(sys.argv)

from django.db import models

class Author(models.Model):
    name = models.CharField(max_length=100, unique=True)
    born = models.DateField(null=True)

class Book(models.Model):
    author = models.ForeignKey(Author, on_delete=models.CASCADE, related_name="books")
    title = models.CharField(max_length=200)
    pages = models.IntegerField(default=0)
    published = models.DateTimeField(auto_now_add=True)

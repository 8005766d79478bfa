from django.urls import path

from datasets import views

app_name = "datasets"
urlpatterns = [
    path("", views.index, name="index"),
    path("export.jsonl", views.export, name="export"),
    path("runs/<str:run_id>/", views.run_detail, name="run"),
]

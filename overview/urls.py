from django.urls import path

from overview import views

urlpatterns = [
    path("", views.overview, name="overview"),
]

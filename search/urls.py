from django.urls import path

from search import views

app_name = "search"
urlpatterns = [
    path("", views.search, name="search"),
    path("in/<id:session_id>/", views.find_in_session, name="in_session"),
]

from django.urls import path

from live import views

app_name = "live"
urlpatterns = [
    path("sessions/<id:session_id>/", views.session_updates, name="session"),
    path("requests/", views.request_list_updates, name="requests"),
    path("request-rows/", views.request_rows, name="request_rows"),
    path("requests/<id:request_id>/", views.request_updates, name="request"),
    path("pipeline/", views.pipeline_updates, name="pipeline"),
    path("ledger/", views.ledger_updates, name="ledger"),
]

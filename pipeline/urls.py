from django.urls import path

from pipeline import views

app_name = "pipeline"
urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("charts/", views.charts_at_once, name="charts"),
    path("charts/<slug:chart>/", views.chart, name="chart"),
    path("requests/", views.request_list, name="requests"),
    path("requests/<id:request_id>/", views.request_detail, name="request"),
    path("requests/<id:request_id>/similar/", views.similar_failures, name="similar"),
]

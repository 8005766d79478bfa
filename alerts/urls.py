from django.urls import path

from alerts import views

app_name = "alerts"
urlpatterns = [path("", views.alert_log, name="log")]

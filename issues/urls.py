from django.urls import path

from issues import views

app_name = "issues"
urlpatterns = [
    path("", views.inbox_page, name="inbox"),
    path("<str:issue_id>/", views.issue_page, name="issue"),
    path("<str:issue_id>/change/", views.change_issue, name="change"),
    path("of-request/<id:request_id>/", views.request_issue, name="of_request"),
]

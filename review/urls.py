from django.urls import path

from review import views

app_name = "review"
urlpatterns = [
    path("", views.index, name="index"),
    path("new/", views.new, name="new"),
    path("<str:queue_id>/", views.queue_page, name="queue"),
    path("<str:queue_id>/next/", views.next_item, name="next"),
    path("<str:queue_id>/reopen/", views.reopen, name="reopen"),
    path("<str:queue_id>/items/<str:item_id>/", views.item_page, name="item"),
]

from django.urls import path

from sessions import annotating, bookmarks, preferring, views

app_name = "sessions"
urlpatterns = [
    path("", views.session_list, name="list"),
    path("<id:session_id>/", views.session_detail, name="detail"),
    path("<id:session_id>/compare/", views.compare, name="compare"),
    path("<id:session_id>/branches/", views.branches, name="first_branches"),
    path("<id:session_id>/annotations/", annotating.annotate_session, name="annotate"),
    path(
        "<id:session_id>/annotations/<str:annotation_id>/remove/",
        annotating.remove_annotation,
        name="remove_annotation",
    ),
    path("<id:session_id>/turns/<id:turn_id>/", views.turn_detail, name="turn"),
    path("<id:session_id>/turns/<id:turn_id>/thread/", views.thread, name="thread"),
    path("<id:session_id>/turns/<id:turn_id>/branches/", views.branches, name="branches"),
    path(
        "<id:session_id>/turns/<id:turn_id>/annotations/",
        annotating.annotate_turn,
        name="annotate_turn",
    ),
    path("<id:session_id>/turns/<id:turn_id>/fork/", views.fork, name="fork"),
    path("<id:session_id>/turns/<id:turn_id>/prefer/", preferring.prefer, name="prefer"),
    path("<id:session_id>/turns/<id:turn_id>/bookmark/", bookmarks.bookmark, name="bookmark"),
    path("<id:session_id>/turns/<id:turn_id>/export.json", views.export, name="export"),
    path("<id:session_id>/turns/<id:turn_id>/calls/<id:call_id>/", views.tool_call, name="call"),
    path(
        "<id:session_id>/turns/<id:turn_id>/payload/<str:kind>/<id:item_id>/",
        views.payload,
        name="payload",
    ),
]

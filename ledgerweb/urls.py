from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path, register_converter

from ledgerweb import views
from ledgerweb.converters import LedgerIdConverter

# <id:…> in every app's URLs: ledger ids chosen by other programs (see converters.py).
register_converter(LedgerIdConverter, "id")

# A refused page in the site's layout, naming the role it needs and whom to ask.
handler403 = "ledgerweb.views.refused"

urlpatterns = [
    path("", include("overview.urls")),
    path("healthz", views.healthz, name="healthz"),
    path("favicon.ico", views.favicon),
    path("health/", views.health_report, name="health"),
    path(
        "accounts/login/",
        auth_views.LoginView.as_view(redirect_authenticated_user=True),
        name="login",
    ),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("sessions/", include("sessions.urls")),
    path("bookmarks/", include("sessions.bookmark_urls")),
    path("pipeline/issues/", include("issues.urls")),  # the failure inbox: an app of its own
    path("pipeline/", include("pipeline.urls")),
    path("search/", include("search.urls")),
    path("datasets/", include("datasets.urls")),
    path("alerts/", include("alerts.urls")),
    path("review/", include("review.urls")),
    path("live/", include("live.urls")),
    path("admin/", admin.site.urls),
]

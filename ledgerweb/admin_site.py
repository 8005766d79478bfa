"""The admin site, let in by role (ledgerweb/roles.py): operators and admins use it without
Django's staff flag, which the README never asks anyone to set. Anyone else signed in gets the
site's refused page (which role, whom to ask) instead of the admin's sign-in form saying
"not authorized"."""

from functools import update_wrapper

from django.contrib import admin
from django.contrib.auth.decorators import login_not_required
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache

from ledgerweb.roles import RoleRequired, may_use_admin_site


class LedgerAdminSite(admin.AdminSite):
    site_header = "ledgerweb admin"
    site_title = "ledgerweb"

    def has_permission(self, request) -> bool:
        return may_use_admin_site(request.user)

    def admin_view(self, view, cacheable=False):
        guarded = super().admin_view(view, cacheable)

        def refuse_the_signed_in(request, *args, **kwargs):
            # Signed in without the role: say so here (Django would send them to sign in again).
            user, leaving = request.user, request.path == self._logout_path()
            if user.is_authenticated and not leaving and not self.has_permission(request):
                raise RoleRequired("operator", "The admin site")
            return guarded(request, *args, **kwargs)

        return update_wrapper(refuse_the_signed_in, guarded)

    @method_decorator(never_cache)
    @login_not_required
    def login(self, request, extra_context=None):
        if request.user.is_authenticated and not self.has_permission(request):
            raise RoleRequired("operator", "The admin site")
        return super().login(request, extra_context)

    def _logout_path(self) -> str:
        from django.urls import reverse

        return reverse("admin:logout", current_app=self.name)

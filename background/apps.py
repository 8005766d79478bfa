from django.apps import AppConfig


class BackgroundConfig(AppConfig):
    name = "background"
    verbose_name = "Background work"

    def ready(self) -> None:
        from background import core_jobs

        core_jobs.register_all()

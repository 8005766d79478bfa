from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "demo"

    def ready(self) -> None:
        from demo import live

        live.register_all()  # the demo's in-flight requests are finished as time passes

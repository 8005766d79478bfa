from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "demo"
    verbose_name = "Demo ledger"

    def ready(self) -> None:
        from background.jobs import register
        from demo import live
        from demo.live_writer import JOB

        live.register_all()  # the demo's in-flight requests are finished as time passes
        # Writes only to a ledger `ledger_demo --live` built (make demo): see demo/marker.py.
        register(JOB)

from django.apps import AppConfig


class OtelConfig(AppConfig):
    name = "otel"
    verbose_name = "OpenTelemetry export"

from django.contrib import admin

# The ledger is append-only (seed 000) and ledgerweb deletes nothing: no bulk delete anywhere.
admin.site.disable_action("delete_selected")
admin.site.site_header = "ledgerweb admin"
admin.site.site_title = "ledgerweb"

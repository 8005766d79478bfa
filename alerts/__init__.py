"""Alerts: rules kept in ledgerweb's database and managed in the admin (a new issue, a
regression, a failure rate above a threshold, requests stuck in processing, the cost of a day),
evaluated by the background process every minute from the summaries it keeps, and delivered by
webhook and by email, at most once per issue or rule per cooldown, a failing webhook retried with
backoff. /alerts/ lists what was sent, to whom and why.
"""

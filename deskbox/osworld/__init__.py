"""OSWorld-compatible server (``deskbox up --osworld``, port 5000): OSWorld's in-VM
HTTP API over a deskbox session, so that OSWorld's controllers, task configs and
graders run against it unchanged."""

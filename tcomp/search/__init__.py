"""The auto-scheduler's parts (DESIGN.md section 3: space -> filters -> rank -> measure
-> record). So far: ``measure`` (one candidate in a process of its own, validated before
it is timed) and ``database`` (the tuning database it records into)."""

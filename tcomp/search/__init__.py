"""The auto-scheduler's parts (DESIGN.md section 3: space -> filters -> rank -> measure
-> record). So far: the record, ``database`` (the tuning database)."""

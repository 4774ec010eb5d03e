"""What every door's routes share at the HTTP edge: dependencies, the error table, streams."""

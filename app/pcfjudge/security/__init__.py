"""Who may call (API keys), how much (quotas) and how big one request may be (cost caps)."""

"""The chat door (POST /v1/chat/completions): its wire models, its plan builder, its response and its route."""

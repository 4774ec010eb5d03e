"""The listwise door (POST /judge/listwise): its wire models, its plan builder, its response and its route."""

"""The pairwise door (POST /judge/pairwise): its wire models, its plan builder, its response and its route."""

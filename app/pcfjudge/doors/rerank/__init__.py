"""The rerank door (Cohere's /v1 and /v2 rerank, TEI's /rerank): its wire models, its plan builder and its routes."""

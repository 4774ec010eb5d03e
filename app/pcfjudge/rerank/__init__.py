"""Reranking as PCFJudge (``core``): documents as the candidates of one listwise judgment; the routes are
``api.routes.rerank`` (TEI and Cohere shapes)."""

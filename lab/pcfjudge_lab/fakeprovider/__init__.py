"""A fake LLM provider speaking OpenAI Chat Completions and Anthropic Messages, answering with the simulated judge.

It is the test double for the end-to-end tests (the official SDKs talk to it over real HTTP), the backend for load
benchmarks, and a way to try a deployment without spending money: ``pcfjudge fake-provider --port 8100``, then
``OPENAI_API_KEY=anything PCFJ_OPENAI_BASE_URL=http://127.0.0.1:8100/v1`` or
``ANTHROPIC_API_KEY=anything PCFJ_ANTHROPIC_BASE_URL=http://127.0.0.1:8100``. The app is
``pcfjudge_lab.fakeprovider.fake_server.create_fake_app``; faults are injected through its ``/_control`` endpoints.
"""

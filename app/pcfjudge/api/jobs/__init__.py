"""Jobs (docs/api/jobs.md): intake at both doors (``job_intake``), the views (``job_view``), the runner that claims,
runs, renews and resumes them (``job_runner``) through the app itself (``loopback``), and their webhooks
(``webhooks``). The records live in ``pcfjudge.cache.job_store`` (Redis, or this process)."""

"""Jobs (docs/api/jobs.md): intake at both doors (``job_intake``), the views (``job_view``), the runner that claims,
runs their plans in process with their routes' own answer, renews and resumes them (``job_runner``), and their webhooks
(``webhooks``). The records live in ``pcfjudge.cache.job_store`` (Redis, or this process)."""

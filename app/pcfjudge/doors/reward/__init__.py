"""The reward door (/v1/reward; OpenRLHF's /get_reward and slime's /v1/reward/one): its wire models, its plan builder and its routes."""

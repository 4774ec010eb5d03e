"""Trainer-side reward functions that call a pcfjudge service: ``verl`` (custom_reward_function) and ``trl``
(GRPOTrainer ``reward_funcs``). They import only httpx and the standard library (and ``pcfjudge.client.http``), so a
training process loads no FastAPI, Redis or provider SDK. OpenRLHF and slime need no code: they post to
``/get_reward`` and ``/v1/reward/one`` directly (see README "Rewards for RL")."""

"""A peft-style LoRA fine-tune and CleanRL-style PPO (discrete and continuous actions), written the way peft's
tuners/lora/layer.py + model.py and cleanrl/ppo.py + ppo_continuous_action.py write them, for either library.

Programs return (records, model, init) like _r23b_hf's.  PPO's sampled actions are random draws, which the two
libraries do not share: torch's run records them and ember's replays them through `get_action_and_value(x,
action)` (the same path the update uses), so both see the same trajectories.
"""

from __future__ import annotations

import io
import math
import re

import numpy as np
from _r23b_hf import load_init, to_numpy

# ------------------------------------------------------------------------------------------------ LoRA


def lora_classes(T):
    nn = T.nn

    class LoraLayer(nn.Module):
        adapter_layer_names = ("lora_A", "lora_B")

        def __init__(self, base_layer, adapter_name, r, lora_alpha, lora_dropout):
            super().__init__()
            self.base_layer = base_layer
            self.r, self.lora_alpha, self.scaling = {}, {}, {}
            self.lora_dropout = nn.ModuleDict({})
            self.lora_A = nn.ModuleDict({})
            self.lora_B = nn.ModuleDict({})
            self.merged_adapters = []
            self.in_features, self.out_features = base_layer.in_features, base_layer.out_features
            self.update_layer(adapter_name, r, lora_alpha, lora_dropout)
            self.active_adapter = adapter_name

        def update_layer(self, adapter_name, r, lora_alpha, lora_dropout):
            self.r[adapter_name] = r
            self.lora_alpha[adapter_name] = lora_alpha
            lora_dropout_layer = nn.Dropout(p=lora_dropout) if lora_dropout > 0.0 else nn.Identity()
            self.lora_dropout.update(nn.ModuleDict({adapter_name: lora_dropout_layer}))
            self.lora_A[adapter_name] = nn.Linear(self.in_features, r, bias=False)
            self.lora_B[adapter_name] = nn.Linear(r, self.out_features, bias=False)
            self.scaling[adapter_name] = lora_alpha / r
            self.reset_lora_parameters(adapter_name)

        def reset_lora_parameters(self, adapter_name):
            nn.init.kaiming_uniform_(self.lora_A[adapter_name].weight, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B[adapter_name].weight)

        @property
        def merged(self):
            return bool(self.merged_adapters)

        def get_delta_weight(self, adapter):
            weight_A = self.lora_A[adapter].weight
            weight_B = self.lora_B[adapter].weight
            return (weight_B @ weight_A) * self.scaling[adapter]

        def merge(self):
            if self.active_adapter not in self.merged_adapters:
                self.base_layer.weight.data += self.get_delta_weight(self.active_adapter)
                self.merged_adapters.append(self.active_adapter)

        def unmerge(self):
            while len(self.merged_adapters) > 0:
                active_adapter = self.merged_adapters.pop()
                self.base_layer.weight.data -= self.get_delta_weight(active_adapter)

        def forward(self, x):
            result = self.base_layer(x)
            if self.merged:
                return result
            torch_result_dtype = result.dtype
            lora_A = self.lora_A[self.active_adapter]
            lora_B = self.lora_B[self.active_adapter]
            dropout = self.lora_dropout[self.active_adapter]
            scaling = self.scaling[self.active_adapter]
            x = x.to(lora_A.weight.dtype)
            result = result + lora_B(lora_A(dropout(x))) * scaling
            return result.to(torch_result_dtype)

    class Block(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.norm = nn.LayerNorm(d)
            self.q_proj = nn.Linear(d, d)
            self.k_proj = nn.Linear(d, d)
            self.v_proj = nn.Linear(d, d)
            self.o_proj = nn.Linear(d, d)
            self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))

        def forward(self, x, key_padding):
            b, s, d = x.shape
            h = self.norm(x)
            q, k, v = (p(h).view(b, s, self.heads, d // self.heads).transpose(1, 2)
                       for p in (self.q_proj, self.k_proj, self.v_proj))
            mask = key_padding[:, None, None, :]  # True = attend
            a = T.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            x = x + self.o_proj(a.transpose(1, 2).reshape(b, s, d))
            return x + self.mlp(x)

    class TinyClassifier(nn.Module):
        def __init__(self, vocab=20, d=16, heads=2, layers=2, classes=3):
            super().__init__()
            self.embed = nn.Embedding(vocab, d, padding_idx=0)
            self.layers = nn.ModuleList([Block(d, heads) for _ in range(layers)])
            self.score = nn.Linear(d, classes)

        def forward(self, ids):
            keep = ids != 0
            x = self.embed(ids)
            for layer in self.layers:
                x = layer(x, keep)
            pooled = (x * keep.unsqueeze(-1)).sum(1) / keep.sum(1, keepdim=True)
            return self.score(pooled)

    return LoraLayer, TinyClassifier


def inject_adapter(T, model, LoraLayer, target_modules, r, alpha, dropout, modules_to_save=()):
    """peft's BaseTuner.inject_adapter: named_modules surgery, replacing each target with a LoRA wrapper set on
    its parent; then mark_only_adapters_as_trainable."""
    key_list = [key for key, _ in model.named_modules()]
    for key in key_list:
        if not any(re.fullmatch(f".*\\.{t}$", key) or key == t for t in target_modules):
            continue
        parent = model.get_submodule(".".join(key.split(".")[:-1]))
        target_name = key.split(".")[-1]
        target = model.get_submodule(key)
        new_module = LoraLayer(target, "default", r, alpha, dropout)
        setattr(parent, target_name, new_module)
    for n, p in model.named_parameters():
        if "lora_" not in n:
            p.requires_grad = False
    for name in modules_to_save:
        model.get_submodule(name).requires_grad_(True)
    return model


def lora_data(seed=2, n=12, length=7, vocab=20):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, (n, length))
    lengths = rng.integers(3, length + 1, n)
    ids[np.arange(length)[None, :] >= lengths[:, None]] = 0
    return ids, rng.integers(0, 3, n)


def lora_program(T, init=None, steps=6, dropout=0.0):
    LoraLayer, TinyClassifier = lora_classes(T)
    T.manual_seed(0)
    base = TinyClassifier()
    base_state = load_init(T, base, init and init["base"])
    model = inject_adapter(T, base, LoraLayer, ["q_proj", "v_proj"], r=4, alpha=8, dropout=dropout,
                           modules_to_save=["score"])
    adapter_init = {k: v for k, v in init["adapter"].items()} if init else None
    if adapter_init is not None:
        missing, unexpected = model.load_state_dict({k: T.tensor(v) for k, v in adapter_init.items()}, strict=False)
        assert not unexpected
    adapter_init = {k: to_numpy(v) for k, v in model.state_dict().items() if "lora_" in k}
    records = {
        "state_keys": sorted(model.state_dict().keys()),
        "trainable": sorted(n for n, p in model.named_parameters() if p.requires_grad),
        "n_trainable": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "n_all": sum(p.numel() for p in model.parameters()),
    }
    ids_np, labels_np = lora_data()
    ids, labels = T.tensor(ids_np), T.tensor(labels_np)
    optimizer = T.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-2)
    loss_fn = T.nn.CrossEntropyLoss()
    model.train()
    for step in range(steps):
        for i in range(0, len(ids), 6):
            logits = model(ids[i : i + 6])
            loss = loss_fn(logits, labels[i : i + 6])
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            records[f"loss{step}_{i}"] = loss.item()
    records["grad_fns"] = [type(t.grad_fn).__name__ for t in (loss, logits)]
    records["base_grad_is_none"] = all(p.grad is None for n, p in model.named_parameters() if not p.requires_grad)
    model.eval()
    with T.no_grad():
        unmerged = model(ids)
        lora_modules = [m for m in model.modules() if isinstance(m, LoraLayer)]
        for m in lora_modules:
            m.merge()
        merged = model(ids)
        merged_weight = to_numpy(model.layers[0].q_proj.base_layer.weight)
        for m in lora_modules:
            m.unmerge()
        unmerged_again = model(ids)
    records["unmerged"] = to_numpy(unmerged)
    records["merged"] = to_numpy(merged)
    records["merged_weight"] = merged_weight
    records["merge_error"] = float(np.abs(to_numpy(merged) - to_numpy(unmerged)).max() < 1e-4)
    records["unmerge_error"] = float(np.abs(to_numpy(unmerged_again) - to_numpy(unmerged)).max() < 1e-4)
    # get_peft_model_state_dict: the adapter and the modules to save, saved and loaded into a fresh model
    adapter = {k: v for k, v in model.state_dict().items() if "lora_" in k or k.startswith("score.")}
    buffer = io.BytesIO()
    T.save(adapter, buffer)
    buffer.seek(0)
    T.manual_seed(1)
    fresh = TinyClassifier()
    fresh.load_state_dict({k: T.tensor(v) for k, v in base_state.items()})
    fresh = inject_adapter(T, fresh, LoraLayer, ["q_proj", "v_proj"], r=4, alpha=8, dropout=dropout,
                           modules_to_save=["score"])
    result = fresh.load_state_dict(T.load(buffer), strict=False)
    records["missing"] = sorted(result.missing_keys)
    records["unexpected"] = sorted(result.unexpected_keys)
    fresh.eval()
    with T.no_grad():
        records["reloaded"] = to_numpy(fresh(ids))
    for k, v in model.state_dict().items():
        records[f"param:{k}"] = to_numpy(v)
    return records, model, {"base": base_state, "adapter": adapter_init}


# ------------------------------------------------------------------------------------------------ PPO


class ChainEnv:
    """A deterministic corridor: positions 0..n-1, action 1 steps right, 0 left; reward 1 at the right end
    (then reset), -0.01 a step otherwise; episodes also end after `limit` steps."""

    def __init__(self, n=5, limit=12, start=0):
        self.n, self.limit, self.start = n, limit, start

    def reset(self):
        self.pos, self.t = self.start, 0
        return self.obs()

    def obs(self):
        o = np.zeros(self.n + 1, dtype=np.float32)
        o[self.pos] = 1.0
        o[-1] = self.t / self.limit
        return o

    def step(self, action):
        self.pos = max(0, min(self.n - 1, self.pos + (1 if action == 1 else -1)))
        self.t += 1
        done = self.pos == self.n - 1 or self.t >= self.limit
        reward = 1.0 if self.pos == self.n - 1 else -0.01
        obs = self.reset() if done else self.obs()
        return obs, reward, done


class PointEnv:
    """A 1-D point pushed by a continuous action; reward -|x - 1|; ends after `limit` steps."""

    def __init__(self, start=0.0, limit=6):
        self.start, self.limit = start, limit

    def reset(self):
        self.x, self.t = self.start, 0
        return self.obs()

    def obs(self):
        return np.array([self.x, self.t / self.limit, 1.0], dtype=np.float32)

    def step(self, action):
        self.x = float(np.clip(self.x + 0.5 * np.tanh(action[0]) + 0.1 * action[1], -3, 3))
        self.t += 1
        reward = -abs(self.x - 1.0)
        done = self.t >= self.limit
        obs = self.reset() if done else self.obs()
        return obs, reward, done


def ppo_classes(T):
    nn = T.nn
    from_distributions = T.distributions

    def layer_init(layer, std=np.sqrt(2), bias_const=0.0):
        T.nn.init.orthogonal_(layer.weight, std)
        T.nn.init.constant_(layer.bias, bias_const)
        return layer

    class Agent(nn.Module):
        def __init__(self, obs_dim, n_actions):
            super().__init__()
            self.critic = nn.Sequential(
                layer_init(nn.Linear(obs_dim, 32)), nn.Tanh(),
                layer_init(nn.Linear(32, 32)), nn.Tanh(),
                layer_init(nn.Linear(32, 1), std=1.0),
            )
            self.actor = nn.Sequential(
                layer_init(nn.Linear(obs_dim, 32)), nn.Tanh(),
                layer_init(nn.Linear(32, 32)), nn.Tanh(),
                layer_init(nn.Linear(32, n_actions), std=0.01),
            )

        def get_value(self, x):
            return self.critic(x)

        def get_action_and_value(self, x, action=None):
            logits = self.actor(x)
            probs = from_distributions.Categorical(logits=logits)
            if action is None:
                action = probs.sample()
            return action, probs.log_prob(action), probs.entropy(), self.critic(x)

    class ContinuousAgent(nn.Module):
        def __init__(self, obs_dim, act_dim, independent=False):
            super().__init__()
            self.independent = independent
            self.critic = nn.Sequential(
                layer_init(nn.Linear(obs_dim, 32)), nn.Tanh(),
                layer_init(nn.Linear(32, 1), std=1.0),
            )
            self.actor_mean = nn.Sequential(
                layer_init(nn.Linear(obs_dim, 32)), nn.Tanh(),
                layer_init(nn.Linear(32, act_dim), std=0.01),
            )
            self.actor_logstd = nn.Parameter(T.zeros(1, act_dim))

        def get_value(self, x):
            return self.critic(x)

        def get_action_and_value(self, x, action=None):
            action_mean = self.actor_mean(x)
            action_logstd = self.actor_logstd.expand_as(action_mean)
            action_std = T.exp(action_logstd)
            probs = from_distributions.Normal(action_mean, action_std)
            if self.independent:
                probs = from_distributions.Independent(probs, 1)
                if action is None:
                    action = probs.sample()
                return action, probs.log_prob(action), probs.entropy(), self.critic(x)
            if action is None:
                action = probs.sample()
            return action, probs.log_prob(action).sum(1), probs.entropy().sum(1), self.critic(x)

    return Agent, ContinuousAgent


def ppo_program(T, init=None, continuous=False, independent=False, iterations=3, replay=None):
    """cleanrl ppo.py / ppo_continuous_action.py, compact: num_envs 4, num_steps 8, 2 minibatches, 2 epochs."""
    num_envs, num_steps, num_minibatches, update_epochs = 4, 8, 2, 2
    batch_size = num_envs * num_steps
    minibatch_size = batch_size // num_minibatches
    learning_rate, gamma, gae_lambda, clip_coef, ent_coef, vf_coef, max_grad_norm = 3e-3, 0.99, 0.95, 0.2, 0.01, 0.5, 0.5
    np.random.seed(1)
    T.manual_seed(1)
    Agent, ContinuousAgent = ppo_classes(T)
    if continuous:
        envs = [PointEnv(start=0.25 * i) for i in range(num_envs)]
        obs_shape, action_shape = (3,), (2,)
        agent = ContinuousAgent(3, 2, independent=independent)
    else:
        envs = [ChainEnv(start=i % 3) for i in range(num_envs)]
        obs_shape, action_shape = (6,), ()
        agent = Agent(6, 2)
    init = load_init(T, agent, init)
    optimizer = T.optim.Adam(agent.parameters(), lr=learning_rate, eps=1e-5)
    obs = T.zeros((num_steps, num_envs) + obs_shape)
    actions = T.zeros((num_steps, num_envs) + action_shape)
    logprobs = T.zeros((num_steps, num_envs))
    rewards = T.zeros((num_steps, num_envs))
    dones = T.zeros((num_steps, num_envs))
    values = T.zeros((num_steps, num_envs))
    records = {"state_keys": sorted(agent.state_dict().keys())}
    sampled, sampled_perms = [], []
    if replay is not None:
        replay = list(replay[:-1]) + [list(replay[-1])]
    next_obs = T.Tensor(np.stack([env.reset() for env in envs]))
    next_done = T.zeros(num_envs)
    for iteration in range(1, iterations + 1):
        frac = 1.0 - (iteration - 1.0) / iterations
        lrnow = frac * learning_rate
        optimizer.param_groups[0]["lr"] = lrnow
        for step in range(0, num_steps):
            obs[step] = next_obs
            dones[step] = next_done
            with T.no_grad():
                given = None if replay is None else T.tensor(replay[len(sampled)])
                action, logprob, _, value = agent.get_action_and_value(next_obs, given)
                values[step] = value.flatten()
            sampled.append(action.numpy())
            actions[step] = action
            logprobs[step] = logprob
            results = [env.step(a) for env, a in zip(envs, action.cpu().numpy())]
            next_obs_np = np.stack([r[0] for r in results])
            reward = np.array([r[1] for r in results])
            next_done_np = np.array([r[2] for r in results])
            rewards[step] = T.tensor(reward).to("cpu").view(-1)
            next_obs, next_done = T.Tensor(next_obs_np).to("cpu"), T.Tensor(next_done_np).to("cpu")
        with T.no_grad():
            next_value = agent.get_value(next_obs).reshape(1, -1)
            advantages = T.zeros_like(rewards).to("cpu")
            lastgaelam = 0
            for t in reversed(range(num_steps)):
                if t == num_steps - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + gamma * gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values
        b_obs = obs.reshape((-1,) + obs_shape)
        b_logprobs = logprobs.reshape(-1)
        b_actions = actions.reshape((-1,) + action_shape)
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        b_inds = np.arange(batch_size)
        clipfracs = []
        for epoch in range(update_epochs):
            if continuous:  # ppo_continuous_action's variant: torch.randperm (replayed from torch's run)
                perm = T.randperm(batch_size)
                records[f"perm_ok{iteration}_{epoch}"] = sorted(perm.tolist()) == list(range(batch_size))
                records[f"perm_dtype{iteration}_{epoch}"] = str(perm.dtype).split(".")[-1]
                b_inds = perm.numpy() if replay is None else replay[-1].pop(0)
                sampled_perms.append(b_inds)
            else:
                np.random.shuffle(b_inds)
            for start in range(0, batch_size, minibatch_size):
                end = start + minibatch_size
                mb_inds = b_inds[start:end]
                mb_actions = b_actions[mb_inds] if continuous else b_actions.long()[mb_inds]
                _, newlogprob, entropy, newvalue = agent.get_action_and_value(b_obs[mb_inds], mb_actions)
                logratio = newlogprob - b_logprobs[mb_inds]
                ratio = logratio.exp()
                with T.no_grad():
                    old_approx_kl = (-logratio).mean()
                    approx_kl = ((ratio - 1) - logratio).mean()
                    clipfracs += [((ratio - 1.0).abs() > clip_coef).float().mean().item()]
                mb_advantages = b_advantages[mb_inds]
                mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
                pg_loss1 = -mb_advantages * ratio
                pg_loss2 = -mb_advantages * T.clamp(ratio, 1 - clip_coef, 1 + clip_coef)
                pg_loss = T.max(pg_loss1, pg_loss2).mean()
                newvalue = newvalue.view(-1)
                v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
                v_clipped = b_values[mb_inds] + T.clamp(newvalue - b_values[mb_inds], -clip_coef, clip_coef)
                v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
                v_loss_max = T.max(v_loss_unclipped, v_loss_clipped)
                v_loss = 0.5 * v_loss_max.mean()
                entropy_loss = entropy.mean()
                loss = pg_loss - ent_coef * entropy_loss + v_loss * vf_coef
                optimizer.zero_grad()
                loss.backward()
                grad_norm = T.nn.utils.clip_grad_norm_(agent.parameters(), max_grad_norm)
                optimizer.step()
                key = f"{iteration}_{epoch}_{start}"
                records[f"loss{key}"] = loss.item()
                records[f"kl{key}"] = approx_kl.item()
                records[f"oldkl{key}"] = old_approx_kl.item()
                records[f"gradnorm{key}"] = grad_norm.item()
                records["grad_fns"] = [type(t.grad_fn).__name__ for t in (loss, pg_loss, v_loss, newlogprob, ratio)]
        y_pred, y_true = b_values.cpu().numpy(), b_returns.cpu().numpy()
        var_y = np.var(y_true)
        explained_var = np.nan if var_y == 0 else 1 - np.var(y_true - y_pred) / var_y
        records[f"explained_var{iteration}"] = explained_var
        records[f"clipfrac{iteration}"] = np.mean(clipfracs)
        records[f"returns{iteration}"] = y_true
        records[f"lr{iteration}"] = optimizer.param_groups[0]["lr"]
        records[f"obs{iteration}"] = b_obs.numpy()
    records["action_dtype"] = str(sampled[0].dtype)
    records["action_shape"] = sampled[0].shape
    for k, v in agent.state_dict().items():
        records[f"param:{k}"] = to_numpy(v)
    return records, agent, init, sampled + [sampled_perms]

"""Hugging Face transformers-style GPT-2 and BERT code paths, written the way modeling_gpt2.py / modeling_bert.py
and generation/utils.py write them (compact re-creations, same idioms), for either library: `T` is torch or ember.

Each program takes `init` (a state dict of numpy arrays, torch's initial weights, or None to keep the library's
own) and returns (records, model, init): records maps names to numpy arrays / Python values to compare.
"""

from __future__ import annotations

import inspect
import io
import math
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Any

import numpy as np


def to_numpy(t):
    return t.detach().cpu().numpy().copy()


def load_init(T, model, init):
    """Load torch's initial weights (numpy) into `model`; return the initial state dict as numpy."""
    if init is not None:
        model.load_state_dict({k: T.tensor(v) for k, v in init.items()})
    return {k: to_numpy(v) for k, v in model.state_dict().items()}


# ------------------------------------------------------------------------------------------------ ModelOutput


class ModelOutput(OrderedDict):
    """transformers.utils.ModelOutput, compact: a dataclass that is also an ordered dict of its non-None fields,
    indexable by name or position."""

    def __post_init__(self):
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                self[f.name] = value

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclass
class CausalLMOutputWithPast(ModelOutput):
    loss: Any | None = None
    logits: Any = None
    past_key_values: Any | None = None
    hidden_states: Any | None = None


@dataclass
class SequenceClassifierOutput(ModelOutput):
    loss: Any | None = None
    logits: Any = None
    mlm_logits: Any = None


def apply_chunking_to_forward(T, forward_fn, chunk_size, chunk_dim, *input_tensors):
    """transformers.pytorch_utils.apply_chunking_to_forward."""
    assert len(input_tensors) > 0
    num_args_in_forward_chunk_fn = len(inspect.signature(forward_fn).parameters)
    if num_args_in_forward_chunk_fn != len(input_tensors):
        raise ValueError("forward_chunk_fn expects a different number of arguments")
    if chunk_size > 0:
        tensor_shape = input_tensors[0].shape[chunk_dim]
        for input_tensor in input_tensors:
            if input_tensor.shape[chunk_dim] != tensor_shape:
                raise ValueError("all input tensors have to be of the same shape")
        if input_tensors[0].shape[chunk_dim] % chunk_size != 0:
            raise ValueError("chunk size must divide the dimension")
        num_chunks = input_tensors[0].shape[chunk_dim] // chunk_size
        input_tensors_chunks = tuple(input_tensor.chunk(num_chunks, dim=chunk_dim) for input_tensor in input_tensors)
        output_chunks = tuple(forward_fn(*input_tensors_chunk) for input_tensors_chunk in zip(*input_tensors_chunks))
        return T.cat(output_chunks, dim=chunk_dim)
    return forward_fn(*input_tensors)


# ------------------------------------------------------------------------------------------------ GPT-2


@dataclass
class GPT2Config:
    vocab_size: int = 29
    n_positions: int = 16
    n_embd: int = 16
    n_head: int = 2
    n_layer: int = 2
    resid_pdrop: float = 0.0
    embd_pdrop: float = 0.0
    attn_pdrop: float = 0.0
    layer_norm_epsilon: float = 1e-5
    initializer_range: float = 0.02
    attn_implementation: str = "eager"
    eos_token_id: int = 28
    pad_token_id: int = 28


def gpt2_classes(T):
    nn = T.nn

    class Conv1D(nn.Module):
        def __init__(self, nf, nx):
            super().__init__()
            self.nf = nf
            self.weight = nn.Parameter(T.empty(nx, nf))
            self.bias = nn.Parameter(T.zeros(nf))
            nn.init.normal_(self.weight, std=0.02)

        def forward(self, x):
            size_out = x.size()[:-1] + (self.nf,)
            x = T.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
            x = x.view(size_out)
            return x

    class NewGELUActivation(nn.Module):
        def forward(self, input):
            return 0.5 * input * (1.0 + T.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * T.pow(input, 3.0))))

    class GPT2Attention(nn.Module):
        def __init__(self, config, layer_idx=None):
            super().__init__()
            max_positions = config.n_positions
            self.register_buffer(
                "bias",
                T.tril(T.ones((max_positions, max_positions), dtype=T.bool)).view(1, 1, max_positions, max_positions),
                persistent=False,
            )
            self.register_buffer("masked_bias", T.tensor(-1e4), persistent=False)
            self.embed_dim = config.n_embd
            self.num_heads = config.n_head
            self.head_dim = self.embed_dim // self.num_heads
            self.split_size = self.embed_dim
            self.scale_attn_weights = True
            self.layer_idx = layer_idx
            self.config = config
            self.c_attn = Conv1D(3 * self.embed_dim, self.embed_dim)
            self.c_proj = Conv1D(self.embed_dim, self.embed_dim)
            self.attn_dropout = nn.Dropout(config.attn_pdrop)
            self.resid_dropout = nn.Dropout(config.resid_pdrop)

        def _attn(self, query, key, value, attention_mask=None, head_mask=None):
            attn_weights = T.matmul(query, key.transpose(-1, -2))
            if self.scale_attn_weights:
                attn_weights = attn_weights / T.full(
                    [], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device
                )
            query_length, key_length = query.size(-2), key.size(-2)
            causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
            mask_value = T.finfo(attn_weights.dtype).min
            mask_value = T.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
            attn_weights = T.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
            if attention_mask is not None:
                attn_weights = attn_weights + attention_mask
            attn_weights = nn.functional.softmax(attn_weights, dim=-1)
            attn_weights = attn_weights.type(value.dtype)
            attn_weights = self.attn_dropout(attn_weights)
            if head_mask is not None:
                attn_weights = attn_weights * head_mask
            attn_output = T.matmul(attn_weights, value)
            return attn_output, attn_weights

        def _split_heads(self, tensor, num_heads, attn_head_size):
            new_shape = tensor.size()[:-1] + (num_heads, attn_head_size)
            tensor = tensor.view(new_shape)
            return tensor.permute(0, 2, 1, 3)

        def _merge_heads(self, tensor, num_heads, attn_head_size):
            tensor = tensor.permute(0, 2, 1, 3).contiguous()
            new_shape = tensor.size()[:-2] + (num_heads * attn_head_size,)
            return tensor.view(new_shape)

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False, sdpa_mask=None):
            query, key, value = self.c_attn(hidden_states).split(self.split_size, dim=2)
            query = self._split_heads(query, self.num_heads, self.head_dim)
            key = self._split_heads(key, self.num_heads, self.head_dim)
            value = self._split_heads(value, self.num_heads, self.head_dim)
            if layer_past is not None:
                past_key, past_value = layer_past
                key = T.cat((past_key, key), dim=-2)
                value = T.cat((past_value, value), dim=-2)
            present = (key, value) if use_cache is True else None
            if self.config.attn_implementation == "sdpa":
                q_len = query.shape[-2]
                is_causal = sdpa_mask is None and q_len > 1
                attn_output = nn.functional.scaled_dot_product_attention(
                    query, key, value, attn_mask=sdpa_mask, dropout_p=self.attn_dropout.p if self.training else 0.0,
                    is_causal=is_causal,
                )
            else:
                attn_output, _ = self._attn(query, key, value, attention_mask)
            attn_output = self._merge_heads(attn_output, self.num_heads, self.head_dim)
            attn_output = self.c_proj(attn_output)
            attn_output = self.resid_dropout(attn_output)
            return attn_output, present

    class GPT2MLP(nn.Module):
        def __init__(self, intermediate_size, config):
            super().__init__()
            self.c_fc = Conv1D(intermediate_size, config.n_embd)
            self.c_proj = Conv1D(config.n_embd, intermediate_size)
            self.act = NewGELUActivation()
            self.dropout = nn.Dropout(config.resid_pdrop)

        def forward(self, hidden_states):
            hidden_states = self.c_fc(hidden_states)
            hidden_states = self.act(hidden_states)
            hidden_states = self.c_proj(hidden_states)
            return self.dropout(hidden_states)

    class GPT2Block(nn.Module):
        def __init__(self, config, layer_idx=None):
            super().__init__()
            self.ln_1 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
            self.attn = GPT2Attention(config, layer_idx=layer_idx)
            self.ln_2 = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
            self.mlp = GPT2MLP(4 * config.n_embd, config)

        def forward(self, hidden_states, layer_past=None, attention_mask=None, use_cache=False, sdpa_mask=None):
            residual = hidden_states
            hidden_states = self.ln_1(hidden_states)
            attn_output, present = self.attn(
                hidden_states, layer_past=layer_past, attention_mask=attention_mask, use_cache=use_cache,
                sdpa_mask=sdpa_mask,
            )
            hidden_states = attn_output + residual
            residual = hidden_states
            hidden_states = self.ln_2(hidden_states)
            feed_forward_hidden_states = self.mlp(hidden_states)
            hidden_states = residual + feed_forward_hidden_states
            return hidden_states, present

    class GPT2LMHeadModel(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.wte = nn.Embedding(config.vocab_size, config.n_embd)
            self.wpe = nn.Embedding(config.n_positions, config.n_embd)
            self.drop = nn.Dropout(config.embd_pdrop)
            self.h = nn.ModuleList([GPT2Block(config, layer_idx=i) for i in range(config.n_layer)])
            self.ln_f = nn.LayerNorm(config.n_embd, eps=config.layer_norm_epsilon)
            self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
            self.apply(self._init_weights)
            self.lm_head.weight = self.wte.weight  # tie_weights
            for name, p in self.named_parameters():
                if name.endswith("c_proj.weight"):
                    p.data.normal_(mean=0.0, std=(config.initializer_range / math.sqrt(2 * config.n_layer)))

        def _init_weights(self, module):
            if isinstance(module, (nn.Linear, Conv1D)):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
                if module.bias is not None:
                    module.bias.data.zero_()
            elif isinstance(module, nn.Embedding):
                module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
                if module.padding_idx is not None:
                    module.weight.data[module.padding_idx].zero_()
            elif isinstance(module, nn.LayerNorm):
                module.bias.data.zero_()
                module.weight.data.fill_(1.0)

        @property
        def dtype(self):
            return next(self.parameters()).dtype

        def _sdpa_mask(self, attention_mask, q_len, past_length, dtype):
            """_prepare_4d_causal_attention_mask_for_sdpa: None when plain causal attention does; else a float mask
            with fully masked rows unmasked (AttentionMaskConverter._unmask_unattended)."""
            if attention_mask is None or bool((attention_mask == 1).all()):
                return None if q_len > 1 or past_length == 0 else None
            kv_len = past_length + q_len
            min_dtype = T.finfo(dtype).min
            causal_mask = T.full((q_len, kv_len), fill_value=min_dtype, dtype=dtype)
            causal_mask = T.triu(causal_mask, diagonal=1 + past_length) if q_len > 1 else T.zeros_like(causal_mask)
            causal_mask = causal_mask[None, None, :, :].expand(attention_mask.shape[0], 1, -1, -1).clone()
            padding_mask = attention_mask[:, None, None, :kv_len] == 0
            causal_mask = causal_mask.masked_fill(padding_mask, min_dtype)
            return causal_mask.mul(~T.all(causal_mask == min_dtype, dim=-1, keepdim=True))

        def forward(self, input_ids, past_key_values=None, attention_mask=None, position_ids=None, labels=None,
                    use_cache=None):
            input_shape = input_ids.size()
            input_ids = input_ids.view(-1, input_shape[-1])
            batch_size = input_ids.shape[0]
            if past_key_values is None:
                past_length = 0
                past_key_values = tuple([None] * len(self.h))
            else:
                past_length = past_key_values[0][0].size(-2)
            if position_ids is None:
                position_ids = T.arange(past_length, input_shape[-1] + past_length, dtype=T.long)
                position_ids = position_ids.unsqueeze(0)
            sdpa_mask = None
            if attention_mask is not None:
                if self.config.attn_implementation == "sdpa":
                    sdpa_mask = self._sdpa_mask(attention_mask, input_shape[-1], past_length, self.dtype)
                attention_mask = attention_mask.view(batch_size, -1)
                attention_mask = attention_mask[:, None, None, :]
                attention_mask = attention_mask.to(dtype=self.dtype)
                attention_mask = (1.0 - attention_mask) * T.finfo(self.dtype).min
            inputs_embeds = self.wte(input_ids)
            position_embeds = self.wpe(position_ids)
            hidden_states = inputs_embeds + position_embeds
            hidden_states = self.drop(hidden_states)
            output_shape = (-1,) + input_shape[1:] + (hidden_states.size(-1),)
            presents = () if use_cache else None
            for block, layer_past in zip(self.h, past_key_values):
                hidden_states, present = block(hidden_states, layer_past=layer_past, attention_mask=attention_mask,
                                               use_cache=use_cache, sdpa_mask=sdpa_mask)
                if use_cache is True:
                    presents = presents + (present,)
            hidden_states = self.ln_f(hidden_states)
            hidden_states = hidden_states.view(output_shape)
            lm_logits = self.lm_head(hidden_states)
            loss = None
            if labels is not None:
                shift_logits = lm_logits[..., :-1, :].contiguous()
                shift_labels = labels[..., 1:].contiguous()
                loss_fct = nn.CrossEntropyLoss()
                loss = loss_fct(shift_logits.view(-1, shift_logits.size(-1)), shift_labels.view(-1))
            return CausalLMOutputWithPast(loss=loss, logits=lm_logits, past_key_values=presents)

    return GPT2LMHeadModel, Conv1D


# ------------------------------------------------------------------------------------------------ generation


def repetition_penalty(T, input_ids, scores, penalty):
    """RepetitionPenaltyLogitsProcessor."""
    score = T.gather(scores, 1, input_ids)
    score = T.where(score < 0, score * penalty, score / penalty)
    scores.scatter_(1, input_ids, score)
    return scores


def top_k_filter(T, scores, top_k, filter_value=-float("inf")):
    """TopKLogitsWarper."""
    top_k = min(top_k, scores.size(-1))
    indices_to_remove = scores < T.topk(scores, top_k)[0][..., -1, None]
    return scores.masked_fill(indices_to_remove, filter_value)


def top_p_filter(T, scores, top_p, filter_value=-float("inf"), min_tokens_to_keep=1):
    """TopPLogitsWarper."""
    sorted_logits, sorted_indices = T.sort(scores, descending=False)
    cumulative_probs = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
    sorted_indices_to_remove = cumulative_probs <= (1 - top_p)
    sorted_indices_to_remove[..., -min_tokens_to_keep:] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices, sorted_indices_to_remove)
    return scores.masked_fill(indices_to_remove, filter_value)


def greedy_generate(T, model, input_ids, attention_mask, max_new_tokens, penalty=1.3):
    """GenerationMixin._sample with do_sample=False: left-padded batch, cached keys, position ids from the
    attention mask, repetition penalty, top-k and top-p warpers (argmax of what they keep), eos bookkeeping."""
    cfg = model.config
    unfinished_sequences = T.ones(input_ids.shape[0], dtype=T.long, device=input_ids.device)
    past_key_values = None
    all_scores = []
    for _ in range(max_new_tokens):
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values is not None:
            model_inputs = input_ids[:, -1:]
            position_ids = position_ids[:, -input_ids.shape[1] :][:, -1:]
        else:
            model_inputs = input_ids
        with T.no_grad():
            outputs = model(model_inputs, past_key_values=past_key_values, attention_mask=attention_mask,
                            position_ids=position_ids, use_cache=True)
        next_token_logits = outputs.logits[:, -1, :].clone().float()
        past_key_values = outputs.past_key_values
        next_token_scores = repetition_penalty(T, input_ids, next_token_logits, penalty)
        next_token_scores = top_k_filter(T, next_token_scores, 10)
        next_token_scores = top_p_filter(T, next_token_scores, 0.9)
        all_scores.append(to_numpy(next_token_scores))
        next_tokens = T.argmax(next_token_scores, dim=-1)
        next_tokens = next_tokens * unfinished_sequences + cfg.pad_token_id * (1 - unfinished_sequences)
        input_ids = T.cat([input_ids, next_tokens[:, None]], dim=-1)
        attention_mask = T.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
        is_done = T.isin(input_ids[:, -1], T.tensor([cfg.eos_token_id], device=input_ids.device))
        unfinished_sequences = unfinished_sequences & ~is_done
        if unfinished_sequences.max() == 0:
            break
    return input_ids, np.stack(all_scores)


def beam_generate(T, model, input_ids, num_beams, steps):
    """A compact beam search (no length penalty nor eos): log-softmax scores plus running beam scores, topk over
    num_beams * vocab, beam index by floor division, cache reordered with index_select."""
    batch_size, cur_len = input_ids.shape
    vocab_size = model.config.vocab_size
    input_ids = input_ids.repeat_interleave(num_beams, dim=0)
    beam_scores = T.zeros((batch_size, num_beams), dtype=T.float, device=input_ids.device)
    beam_scores[:, 1:] = -1e9
    beam_scores = beam_scores.view((batch_size * num_beams,))
    past_key_values = None
    for _ in range(steps):
        model_inputs = input_ids if past_key_values is None else input_ids[:, -1:]
        with T.no_grad():
            outputs = model(model_inputs, past_key_values=past_key_values, use_cache=True)
        next_token_logits = outputs.logits[:, -1, :]
        past_key_values = outputs.past_key_values
        next_token_scores = T.nn.functional.log_softmax(next_token_logits, dim=-1)
        next_token_scores = next_token_scores + beam_scores[:, None].expand_as(next_token_scores)
        next_token_scores = next_token_scores.view(batch_size, num_beams * vocab_size)
        next_token_scores, next_tokens = T.topk(next_token_scores, 2 * num_beams, dim=1, largest=True, sorted=True)
        next_indices = T.div(next_tokens, vocab_size, rounding_mode="floor")
        next_tokens = next_tokens % vocab_size
        beam_idx = (next_indices + T.arange(batch_size)[:, None] * num_beams)[:, :num_beams].reshape(-1)
        beam_scores = next_token_scores[:, :num_beams].reshape(-1)
        input_ids = T.cat([input_ids[beam_idx, :], next_tokens[:, :num_beams].reshape(-1, 1)], dim=-1)
        past_key_values = tuple(
            tuple(past_state.index_select(0, beam_idx.to(past_state.device)) for past_state in layer_past)
            for layer_past in past_key_values
        )
    return input_ids, beam_scores


def gpt2_data(seed=0, batch=3, length=8, vocab=28):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab - 1, (batch, length))
    mask = np.ones((batch, length), dtype=np.int64)
    mask[1, :2] = 0  # left padding, as generation pads
    mask[2, :3] = 0
    ids[mask == 0] = vocab  # pad token (== eos)
    return ids, mask


def gpt2_program(T, init=None, dtype="float32", attn="eager", steps=6, dropout=0.0):
    GPT2LMHeadModel, _ = gpt2_classes(T)
    T.manual_seed(0)
    config = GPT2Config(attn_implementation=attn, resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout)
    model = GPT2LMHeadModel(config)
    model.to(getattr(T, dtype))
    init = load_init(T, model, init)
    records = {"state_keys": sorted(model.state_dict().keys())}
    ids_np, mask_np = gpt2_data()
    input_ids = T.tensor(ids_np)
    attention_mask = T.tensor(mask_np)
    labels = input_ids.clone()
    labels[attention_mask == 0] = -100
    position_ids = attention_mask.long().cumsum(-1) - 1
    position_ids.masked_fill_(attention_mask == 0, 1)

    no_decay = ["bias", "ln_"]
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
         "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
         "weight_decay": 0.0},
    ]
    optimizer = T.optim.AdamW(groups, lr=1e-2)
    warmup, total = 2, steps

    def lr_lambda(current_step):  # get_linear_schedule_with_warmup
        if current_step < warmup:
            return float(current_step) / float(max(1, warmup))
        return max(0.0, float(total - current_step) / float(max(1, total - warmup)))

    scheduler = T.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda, -1)
    model.train()
    for step in range(steps):
        outputs = model(input_ids, attention_mask=attention_mask, position_ids=position_ids, labels=labels)
        loss = outputs[0]
        loss.backward()
        T.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        records[f"loss{step}"] = loss.item()
        records[f"lr{step}"] = scheduler.get_last_lr()[0]
    records["grad_fns"] = [type(t.grad_fn).__name__ for t in (loss, outputs.logits)]  # what print() shows
    records["tied"] = model.lm_head.weight is model.wte.weight
    records["logits_fields"] = list(outputs.keys())
    model.eval()
    with T.no_grad():
        out = model(input_ids, attention_mask=attention_mask, position_ids=position_ids, labels=labels)
    records["eval_loss"] = out.loss.item()
    records["eval_logits"] = to_numpy(out.logits)[attention_mask.numpy() == 1]
    generated, scores = greedy_generate(T, model, input_ids, attention_mask, 5)
    records["greedy"] = generated.numpy()
    records["greedy_scores"] = np.where(np.isfinite(scores), scores, 0.0)
    records["greedy_kept"] = np.isfinite(scores)
    beams, beam_scores = beam_generate(T, model, input_ids[:1, 3:], 2, 4)
    records["beams"] = beams.numpy()
    records["beam_scores"] = to_numpy(beam_scores)
    for k, v in model.state_dict().items():
        records[f"param:{k}"] = to_numpy(v)
    return records, model, init


# ------------------------------------------------------------------------------------------------ BERT


@dataclass
class BertConfig:
    vocab_size: int = 31
    hidden_size: int = 16
    num_hidden_layers: int = 2
    num_attention_heads: int = 2
    intermediate_size: int = 32
    max_position_embeddings: int = 12
    type_vocab_size: int = 2
    layer_norm_eps: float = 1e-12
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    chunk_size_feed_forward: int = 0
    num_labels: int = 3
    pad_token_id: int = 0
    attn_implementation: str = "eager"


def bert_classes(T):
    nn = T.nn

    class BertEmbeddings(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
            self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
            self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.dropout = nn.Dropout(config.hidden_dropout_prob)
            self.register_buffer(
                "position_ids", T.arange(config.max_position_embeddings).expand((1, -1)), persistent=False
            )
            self.register_buffer(
                "token_type_ids", T.zeros(self.position_ids.size(), dtype=T.long), persistent=False
            )

        def forward(self, input_ids, token_type_ids=None, past_key_values_length=0):
            input_shape = input_ids.size()
            seq_length = input_shape[1]
            position_ids = self.position_ids[:, past_key_values_length : seq_length + past_key_values_length]
            if token_type_ids is None:
                buffered_token_type_ids = self.token_type_ids[:, :seq_length]
                buffered_token_type_ids_expanded = buffered_token_type_ids.expand(input_shape[0], seq_length)
                token_type_ids = buffered_token_type_ids_expanded
            inputs_embeds = self.word_embeddings(input_ids)
            token_type_embeddings = self.token_type_embeddings(token_type_ids)
            embeddings = inputs_embeds + token_type_embeddings
            embeddings += self.position_embeddings(position_ids)
            embeddings = self.LayerNorm(embeddings)
            return self.dropout(embeddings)

    class BertSelfAttention(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.num_attention_heads = config.num_attention_heads
            self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
            self.all_head_size = self.num_attention_heads * self.attention_head_size
            self.query = nn.Linear(config.hidden_size, self.all_head_size)
            self.key = nn.Linear(config.hidden_size, self.all_head_size)
            self.value = nn.Linear(config.hidden_size, self.all_head_size)
            self.dropout = nn.Dropout(config.attention_probs_dropout_prob)
            self.sdpa = config.attn_implementation == "sdpa"

        def transpose_for_scores(self, x):
            new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
            x = x.view(new_x_shape)
            return x.permute(0, 2, 1, 3)

        def forward(self, hidden_states, attention_mask=None):
            query_layer = self.transpose_for_scores(self.query(hidden_states))
            key_layer = self.transpose_for_scores(self.key(hidden_states))
            value_layer = self.transpose_for_scores(self.value(hidden_states))
            if self.sdpa:
                attn_output = nn.functional.scaled_dot_product_attention(
                    query_layer, key_layer, value_layer, attn_mask=attention_mask,
                    dropout_p=self.dropout.p if self.training else 0.0, is_causal=False,
                )
                attn_output = attn_output.transpose(1, 2)
                return attn_output.reshape(hidden_states.size()[:-1] + (self.all_head_size,))
            attention_scores = T.matmul(query_layer, key_layer.transpose(-1, -2))
            attention_scores = attention_scores / math.sqrt(self.attention_head_size)
            if attention_mask is not None:
                attention_scores = attention_scores + attention_mask
            attention_probs = nn.functional.softmax(attention_scores, dim=-1)
            attention_probs = self.dropout(attention_probs)
            context_layer = T.matmul(attention_probs, value_layer)
            context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
            new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
            return context_layer.view(new_context_layer_shape)

    class BertSelfOutput(nn.Module):  # also BertOutput, with in_features = intermediate_size
        def __init__(self, config, in_features=None):
            super().__init__()
            self.dense = nn.Linear(in_features or config.hidden_size, config.hidden_size)
            self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
            self.dropout = nn.Dropout(config.hidden_dropout_prob)

        def forward(self, hidden_states, input_tensor):
            hidden_states = self.dense(hidden_states)
            hidden_states = self.dropout(hidden_states)
            return self.LayerNorm(hidden_states + input_tensor)

    class BertLayer(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.chunk_size_feed_forward = config.chunk_size_feed_forward
            self.seq_len_dim = 1
            self.attention = nn.ModuleDict({"self": BertSelfAttention(config), "output": BertSelfOutput(config)})
            self.intermediate = nn.Sequential(OrderedDict(dense=nn.Linear(config.hidden_size, config.intermediate_size),
                                                          intermediate_act_fn=nn.GELU()))
            self.output = BertSelfOutput(config, config.intermediate_size)

        def forward(self, hidden_states, attention_mask=None):
            self_outputs = self.attention["self"](hidden_states, attention_mask)
            attention_output = self.attention["output"](self_outputs, hidden_states)
            return apply_chunking_to_forward(
                T, self.feed_forward_chunk, self.chunk_size_feed_forward, self.seq_len_dim, attention_output
            )

        def feed_forward_chunk(self, attention_output):
            intermediate_output = self.intermediate(attention_output)
            return self.output(intermediate_output, attention_output)

    class BertForMaskedLMAndClassification(nn.Module):
        def __init__(self, config):
            super().__init__()
            self.config = config
            self.embeddings = BertEmbeddings(config)
            self.encoder = nn.ModuleDict({"layer": nn.ModuleList([BertLayer(config)
                                                                  for _ in range(config.num_hidden_layers)])})
            self.pooler = nn.Sequential(nn.Linear(config.hidden_size, config.hidden_size), nn.Tanh())
            self.classifier = nn.Linear(config.hidden_size, config.num_labels)
            self.transform = nn.Sequential(nn.Linear(config.hidden_size, config.hidden_size), nn.GELU(),
                                           nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps))
            self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
            self.decoder_bias = nn.Parameter(T.zeros(config.vocab_size))
            self.decoder.weight = self.embeddings.word_embeddings.weight

        @property
        def dtype(self):
            return next(self.parameters()).dtype

        def get_extended_attention_mask(self, attention_mask, input_shape, dtype=None):
            if dtype is None:
                dtype = self.dtype
            if attention_mask.dim() == 3:
                extended_attention_mask = attention_mask[:, None, :, :]
            elif attention_mask.dim() == 2:
                extended_attention_mask = attention_mask[:, None, None, :]
            else:
                raise ValueError(f"Wrong shape for input_ids (shape {input_shape})")
            extended_attention_mask = extended_attention_mask.to(dtype=dtype)
            extended_attention_mask = (1.0 - extended_attention_mask) * T.finfo(dtype).min
            return extended_attention_mask

        def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None, mlm_labels=None):
            input_shape = input_ids.size()
            if attention_mask is None:
                attention_mask = T.ones(input_shape, device=input_ids.device)
            extended_attention_mask = self.get_extended_attention_mask(attention_mask, input_shape)
            hidden_states = self.embeddings(input_ids, token_type_ids=token_type_ids)
            for layer in self.encoder["layer"]:
                hidden_states = layer(hidden_states, extended_attention_mask)
            pooled_output = self.pooler(hidden_states[:, 0])
            logits = self.classifier(pooled_output)
            mlm_logits = self.decoder(self.transform(hidden_states)) + self.decoder_bias
            loss = None
            if labels is not None:
                loss_fct = nn.CrossEntropyLoss()
                loss = loss_fct(logits.view(-1, self.config.num_labels), labels.view(-1))
                if mlm_labels is not None:
                    loss = loss + loss_fct(mlm_logits.view(-1, self.config.vocab_size), mlm_labels.view(-1))
            return SequenceClassifierOutput(loss=loss, logits=logits, mlm_logits=mlm_logits)

    return BertForMaskedLMAndClassification


def bert_data(seed=1, batch=4, length=8, vocab=31):
    rng = np.random.default_rng(seed)
    ids = rng.integers(3, vocab, (batch, length))
    mask = np.ones((batch, length), dtype=np.int64)
    mask[1, 5:] = 0
    mask[3, 3:] = 0
    ids[mask == 0] = 0
    ids[:, 0] = 1  # [CLS]
    types = np.zeros_like(ids)
    types[:, 4:] = 1
    mlm = np.full_like(ids, -100)
    pick = (rng.uniform(size=ids.shape) < 0.3) & (mask == 1)
    mlm[pick] = ids[pick]
    ids = np.where(pick, 2, ids)  # [MASK]
    labels = rng.integers(0, 3, batch)
    return ids, mask, types, mlm, labels


def bert_program(T, init=None, attn="eager", chunk=2, steps=5, dropout=0.0):
    Bert = bert_classes(T)
    T.manual_seed(0)
    model = Bert(BertConfig(attn_implementation=attn, chunk_size_feed_forward=chunk, hidden_dropout_prob=dropout,
                            attention_probs_dropout_prob=dropout))
    init = load_init(T, model, init)
    records = {"state_keys": sorted(model.state_dict().keys())}
    ids, mask, types, mlm, labels = (T.tensor(a) for a in bert_data())
    optimizer = T.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
    model.train()
    for step in range(steps):
        out = model(ids, attention_mask=mask, token_type_ids=types, labels=labels, mlm_labels=mlm)
        out.loss.backward()
        records[f"gradnorm{step}"] = T.nn.utils.clip_grad_norm_(model.parameters(), 1.0).item()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        records[f"loss{step}"] = out.loss.item()
    records["grad_fns"] = [type(t.grad_fn).__name__ for t in (out.loss, out.logits, out.mlm_logits)]
    model.eval()
    with T.no_grad():
        out = model(ids, attention_mask=mask)
        records["eval_logits"] = to_numpy(out.logits)
        records["eval_mlm"] = to_numpy(out["mlm_logits"])[mask.numpy() == 1]
        records["pred"] = out.logits.argmax(-1).numpy()
    for k, v in model.state_dict().items():
        records[f"param:{k}"] = to_numpy(v)
    return records, model, init


def roundtrip(src_lib, dst_lib, state_dict):
    """Save with one library, load with the other: the state dict dst_lib reads back."""
    buffer = io.BytesIO()
    src_lib.save(state_dict, buffer)
    buffer.seek(0)
    return dst_lib.load(buffer)

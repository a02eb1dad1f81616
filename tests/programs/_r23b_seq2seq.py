"""Seq2seq translation steps, for either library: the PyTorch tutorial's Seq2SeqTransformer (nn.Transformer,
sequence-first) and a batch-first variant with checkpointed encoder layers; and bentrevett's pytorch-seq2seq
packed-LSTM encoder-decoder with Bahdanau attention and teacher forcing.  Programs return (records, model, init)
like _r23b_hf's."""

from __future__ import annotations

import math
import random

import numpy as np
from _r23b_hf import load_init, to_numpy

PAD_IDX, BOS_IDX, EOS_IDX = 1, 2, 3


def seq2seq_data(seed=3, n=6, src_vocab=17, tgt_vocab=19, max_len=7):
    """Sequence-first (len, batch) token batches, <bos> ... <eos> then <pad>, as the tutorial's collate_fn
    (pad_sequence) makes them."""
    rng = np.random.default_rng(seed)

    def batch(vocab):
        lengths = rng.integers(2, max_len - 1, n)
        out = np.full((max_len, n), PAD_IDX)
        for j, length in enumerate(lengths):
            out[0, j] = BOS_IDX
            out[1 : 1 + length, j] = rng.integers(4, vocab, length)
            out[1 + length, j] = EOS_IDX
        return out

    return batch(src_vocab), batch(tgt_vocab)


def transformer_classes(T):
    nn = T.nn

    class PositionalEncoding(nn.Module):
        def __init__(self, emb_size, dropout, maxlen=50, batch_first=False):
            super().__init__()
            den = T.exp(-T.arange(0, emb_size, 2) * math.log(10000) / emb_size)
            pos = T.arange(0, maxlen).reshape(maxlen, 1)
            pos_embedding = T.zeros((maxlen, emb_size))
            pos_embedding[:, 0::2] = T.sin(pos * den)
            pos_embedding[:, 1::2] = T.cos(pos * den)
            pos_embedding = pos_embedding.unsqueeze(0 if batch_first else -2)
            self.batch_first = batch_first
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("pos_embedding", pos_embedding)

        def forward(self, token_embedding):
            if self.batch_first:
                return self.dropout(token_embedding + self.pos_embedding[:, : token_embedding.size(1)])
            return self.dropout(token_embedding + self.pos_embedding[: token_embedding.size(0), :])

    class TokenEmbedding(nn.Module):
        def __init__(self, vocab_size, emb_size):
            super().__init__()
            self.embedding = nn.Embedding(vocab_size, emb_size, padding_idx=PAD_IDX)
            self.emb_size = emb_size

        def forward(self, tokens):
            return self.embedding(tokens.long()) * math.sqrt(self.emb_size)

    class Seq2SeqTransformer(nn.Module):
        def __init__(self, num_encoder_layers, num_decoder_layers, emb_size, nhead, src_vocab_size, tgt_vocab_size,
                     dim_feedforward=32, dropout=0.0, batch_first=False, checkpointing=False):
            super().__init__()
            self.batch_first = batch_first
            self.checkpointing = checkpointing
            self.transformer = nn.Transformer(
                d_model=emb_size, nhead=nhead, num_encoder_layers=num_encoder_layers,
                num_decoder_layers=num_decoder_layers, dim_feedforward=dim_feedforward, dropout=dropout,
                batch_first=batch_first,
            )
            self.generator = nn.Linear(emb_size, tgt_vocab_size)
            self.src_tok_emb = TokenEmbedding(src_vocab_size, emb_size)
            self.tgt_tok_emb = TokenEmbedding(tgt_vocab_size, emb_size)
            self.positional_encoding = PositionalEncoding(emb_size, dropout=dropout, batch_first=batch_first)

        def forward(self, src, trg, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, memory_key_padding_mask):
            src_emb = self.positional_encoding(self.src_tok_emb(src))
            tgt_emb = self.positional_encoding(self.tgt_tok_emb(trg))
            if self.checkpointing:
                memory = self._checkpointed_encode(src_emb, src_mask, src_padding_mask)
                outs = self.transformer.decoder(tgt_emb, memory, tgt_mask=tgt_mask, memory_mask=None,
                                                tgt_key_padding_mask=tgt_padding_mask,
                                                memory_key_padding_mask=memory_key_padding_mask)
            else:
                outs = self.transformer(src_emb, tgt_emb, src_mask, tgt_mask, None, src_padding_mask,
                                        tgt_padding_mask, memory_key_padding_mask)
            return self.generator(outs)

        def _checkpointed_encode(self, x, mask, padding_mask):
            for layer in self.transformer.encoder.layers:
                x = T.utils.checkpoint.checkpoint(layer, x, mask, padding_mask, use_reentrant=False)
            return self.transformer.encoder.norm(x)

        def encode(self, src, src_mask, src_padding_mask=None):
            return self.transformer.encoder(self.positional_encoding(self.src_tok_emb(src)), src_mask,
                                            src_key_padding_mask=src_padding_mask)

        def decode(self, tgt, memory, tgt_mask):
            return self.transformer.decoder(self.positional_encoding(self.tgt_tok_emb(tgt)), memory, tgt_mask)

    return Seq2SeqTransformer


def transformer_program(T, init=None, batch_first=False, checkpointing=False, steps=8, accumulate=2, dropout=0.0):
    import importlib

    importlib.import_module(T.__name__ + ".utils.checkpoint")
    Seq2SeqTransformer = transformer_classes(T)
    T.manual_seed(0)
    model = Seq2SeqTransformer(2, 2, 16, 2, 17, 19, batch_first=batch_first, checkpointing=checkpointing,
                               dropout=dropout)
    for p in model.parameters():
        if p.dim() > 1:
            T.nn.init.xavier_uniform_(p)
    init = load_init(T, model, init)
    records = {"state_keys": sorted(model.state_dict().keys())}

    def generate_square_subsequent_mask(sz):
        mask = (T.triu(T.ones((sz, sz))) == 1).transpose(0, 1)
        mask = mask.float().masked_fill(mask == 0, float("-inf")).masked_fill(mask == 1, 0.0)
        return mask

    def create_mask(src, tgt):
        seq_dim = 1 if batch_first else 0
        src_seq_len, tgt_seq_len = src.shape[seq_dim], tgt.shape[seq_dim]
        if batch_first:
            tgt_mask = T.nn.Transformer.generate_square_subsequent_mask(tgt_seq_len)
        else:
            tgt_mask = generate_square_subsequent_mask(tgt_seq_len)
        src_mask = T.zeros((src_seq_len, src_seq_len)).type(T.bool)
        src_padding_mask = src == PAD_IDX if batch_first else (src == PAD_IDX).transpose(0, 1)
        tgt_padding_mask = tgt == PAD_IDX if batch_first else (tgt == PAD_IDX).transpose(0, 1)
        return src_mask, tgt_mask, src_padding_mask, tgt_padding_mask

    src_np, tgt_np = seq2seq_data()
    src_all, tgt_all = T.tensor(src_np), T.tensor(tgt_np)
    if batch_first:
        src_all, tgt_all = src_all.t().contiguous(), tgt_all.t().contiguous()
    loss_fn = T.nn.CrossEntropyLoss(ignore_index=PAD_IDX, label_smoothing=0.1)
    optimizer = T.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    warmup, d_model = 4, 16
    scheduler = T.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: d_model**-0.5 * min((step + 1) ** -0.5, (step + 1) * warmup**-1.5)
    )
    records["greedy_untrained"] = [greedy_decode(T, model, src_all, j, batch_first) for j in range(3)]
    model.train()
    for step in range(steps):
        lo, hi = (step % 2) * 3, (step % 2) * 3 + 3
        if batch_first:
            src, tgt = src_all[lo:hi], tgt_all[lo:hi]
            tgt_input, tgt_out = tgt[:, :-1], tgt[:, 1:]
        else:
            src, tgt = src_all[:, lo:hi], tgt_all[:, lo:hi]
            tgt_input, tgt_out = tgt[:-1, :], tgt[1:, :]
        src_mask, tgt_mask, src_padding_mask, tgt_padding_mask = create_mask(src, tgt_input)
        logits = model(src, tgt_input, src_mask, tgt_mask, src_padding_mask, tgt_padding_mask, src_padding_mask)
        loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
        (loss / accumulate).backward()
        records[f"loss{step}"] = loss.item()
        records["grad_fns"] = [type(t.grad_fn).__name__ for t in (loss, logits)]
        if (step + 1) % accumulate == 0:
            T.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
            records[f"lr{step}"] = scheduler.get_last_lr()[0]
    model.eval()
    with T.no_grad():
        # the encoder in eval mode with a padding mask (torch's fast path: nested tensors on the padded batch)
        src = src_all[:3] if batch_first else src_all[:, :3]
        src_mask, _, src_padding_mask, _ = create_mask(src, src)
        memory = model.encode(src, src_mask, src_padding_mask)
        keep = ~(src_padding_mask if batch_first else src_padding_mask.t())
        records["eval_memory_kept"] = to_numpy(memory)[keep.numpy()]
        records["eval_memory_padded"] = to_numpy(memory)[~keep.numpy()]
    records["greedy"] = [greedy_decode(T, model, src_all, j, batch_first) for j in range(3)]
    for k, v in model.state_dict().items():
        records[f"param:{k}"] = to_numpy(v)
    return records, model, init


def greedy_decode(T, model, src_all, j, batch_first, max_len=8):
    """The tutorial's greedy_decode on one source sentence (its padding stripped)."""
    src = src_all[j] if batch_first else src_all[:, j]
    src = src[src != PAD_IDX]
    src = src.view(1, -1) if batch_first else src.view(-1, 1)
    num_tokens = src.numel()
    src_mask = T.zeros(num_tokens, num_tokens).type(T.bool)
    with T.no_grad():
        memory = model.encode(src, src_mask)
        ys = T.ones(1, 1).fill_(BOS_IDX).type(T.long)
        for _ in range(max_len - 1):
            size = ys.size(1) if batch_first else ys.size(0)
            tgt_mask = T.nn.Transformer.generate_square_subsequent_mask(size).type(T.bool)
            out = model.decode(ys, memory, tgt_mask)
            if not batch_first:
                out = out.transpose(0, 1)
            prob = model.generator(out[:, -1])
            _, next_word = T.max(prob, dim=1)
            next_word = next_word.item()
            step = T.ones(1, 1).type_as(src.data).fill_(next_word)
            ys = T.cat([ys, step], dim=1 if batch_first else 0)
            if next_word == EOS_IDX:
                break
    return ys.flatten().tolist()


# ------------------------------------------------------------------------------------------------ LSTM + attention


def rnn_classes(T):
    nn = T.nn
    F = nn.functional

    class Encoder(nn.Module):
        def __init__(self, input_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout):
            super().__init__()
            self.embedding = nn.Embedding(input_dim, emb_dim, padding_idx=PAD_IDX)
            self.rnn = nn.LSTM(emb_dim, enc_hid_dim, bidirectional=True)
            self.fc = nn.Linear(enc_hid_dim * 2, dec_hid_dim)
            self.dropout = nn.Dropout(dropout)

        def forward(self, src, src_len):
            embedded = self.dropout(self.embedding(src))
            packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, src_len.to("cpu"), enforce_sorted=False)
            packed_outputs, (hidden, cell) = self.rnn(packed_embedded)
            outputs, lengths = nn.utils.rnn.pad_packed_sequence(packed_outputs)
            hidden = T.tanh(self.fc(T.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1)))
            cell = T.tanh(self.fc(T.cat((cell[-2, :, :], cell[-1, :, :]), dim=1)))
            return outputs, (hidden, cell), lengths

    class Attention(nn.Module):
        def __init__(self, enc_hid_dim, dec_hid_dim):
            super().__init__()
            self.attn = nn.Linear((enc_hid_dim * 2) + dec_hid_dim, dec_hid_dim)
            self.v = nn.Linear(dec_hid_dim, 1, bias=False)

        def forward(self, hidden, encoder_outputs, mask):
            src_len = encoder_outputs.shape[0]
            hidden = hidden.unsqueeze(1).repeat(1, src_len, 1)
            encoder_outputs = encoder_outputs.permute(1, 0, 2)
            energy = T.tanh(self.attn(T.cat((hidden, encoder_outputs), dim=2)))
            attention = self.v(energy).squeeze(2)
            attention = attention.masked_fill(mask == 0, -1e10)
            return F.softmax(attention, dim=1)

    class Decoder(nn.Module):
        def __init__(self, output_dim, emb_dim, enc_hid_dim, dec_hid_dim, dropout, attention):
            super().__init__()
            self.output_dim = output_dim
            self.attention = attention
            self.embedding = nn.Embedding(output_dim, emb_dim)
            self.rnn = nn.LSTM((enc_hid_dim * 2) + emb_dim, dec_hid_dim)
            self.fc_out = nn.Linear((enc_hid_dim * 2) + dec_hid_dim + emb_dim, output_dim)
            self.dropout = nn.Dropout(dropout)

        def forward(self, input, state, encoder_outputs, mask):
            hidden, cell = state
            input = input.unsqueeze(0)
            embedded = self.dropout(self.embedding(input))
            a = self.attention(hidden, encoder_outputs, mask)
            a = a.unsqueeze(1)
            encoder_outputs = encoder_outputs.permute(1, 0, 2)
            weighted = T.bmm(a, encoder_outputs)
            weighted = weighted.permute(1, 0, 2)
            rnn_input = T.cat((embedded, weighted), dim=2)
            output, (hidden, cell) = self.rnn(rnn_input, (hidden.unsqueeze(0), cell.unsqueeze(0)))
            assert (output == hidden).all()
            embedded = embedded.squeeze(0)
            output = output.squeeze(0)
            weighted = weighted.squeeze(0)
            prediction = self.fc_out(T.cat((output, weighted, embedded), dim=1))
            return prediction, (hidden.squeeze(0), cell.squeeze(0)), a.squeeze(1)

    class Seq2Seq(nn.Module):
        def __init__(self, encoder, decoder, src_pad_idx):
            super().__init__()
            self.encoder = encoder
            self.decoder = decoder
            self.src_pad_idx = src_pad_idx

        def create_mask(self, src):
            return (src != self.src_pad_idx).permute(1, 0)

        def forward(self, src, src_len, trg, teacher_forcing_ratio=0.5):
            batch_size = src.shape[1]
            trg_len = trg.shape[0]
            trg_vocab_size = self.decoder.output_dim
            outputs = T.zeros(trg_len, batch_size, trg_vocab_size)
            encoder_outputs, state, _ = self.encoder(src, src_len)
            input = trg[0, :]
            mask = self.create_mask(src)[:, : encoder_outputs.shape[0]]
            attentions = []
            for t in range(1, trg_len):
                output, state, a = self.decoder(input, state, encoder_outputs, mask)
                outputs[t] = output
                attentions.append(a)
                teacher_force = random.random() < teacher_forcing_ratio
                top1 = output.argmax(1)
                input = trg[t] if teacher_force else top1
            return outputs, T.stack(attentions)

    return Encoder, Attention, Decoder, Seq2Seq


def lstm_program(T, init=None, steps=6, dropout=0.0):
    Encoder, Attention, Decoder, Seq2Seq = rnn_classes(T)
    T.manual_seed(0)
    attn = Attention(8, 12)
    model = Seq2Seq(Encoder(17, 6, 8, 12, dropout), Decoder(19, 6, 8, 12, dropout, attn), PAD_IDX)
    for name, param in model.named_parameters():
        if "weight" in name:
            T.nn.init.normal_(param.data, mean=0, std=0.3)
        else:
            T.nn.init.constant_(param.data, 0)
    init = load_init(T, model, init)
    records = {"state_keys": sorted(model.state_dict().keys())}
    src_np, tgt_np = seq2seq_data(seed=4)
    src, trg = T.tensor(src_np), T.tensor(tgt_np)
    src_len = (src != PAD_IDX).sum(0)
    optimizer = T.optim.Adam(model.parameters(), lr=1e-2)
    criterion = T.nn.CrossEntropyLoss(ignore_index=PAD_IDX)
    random.seed(5)
    model.train()
    for step in range(steps):
        optimizer.zero_grad()
        output, attentions = model(src, src_len, trg)
        output_dim = output.shape[-1]
        output = output[1:].view(-1, output_dim)
        loss = criterion(output, trg[1:].reshape(-1))
        loss.backward()
        records["grad_fns"] = [type(t.grad_fn).__name__ for t in (loss, output, attentions)]
        records[f"gradnorm{step}"] = T.nn.utils.clip_grad_norm_(model.parameters(), 1).item()
        optimizer.step()
        records[f"loss{step}"] = loss.item()
    records["attentions"] = to_numpy(attentions)
    model.eval()
    with T.no_grad():
        encoder_outputs, (hidden, cell), lengths = model.encoder(src, src_len)
        records["enc_outputs"] = to_numpy(encoder_outputs)
        records["enc_hidden"] = to_numpy(hidden)
        records["lengths"] = lengths.numpy()
        output, _ = model(src, src_len, trg, 0)  # no teacher forcing: greedy
        records["greedy"] = output[1:].argmax(-1).numpy()
    for k, v in model.state_dict().items():
        records[f"param:{k}"] = to_numpy(v)
    return records, model, init

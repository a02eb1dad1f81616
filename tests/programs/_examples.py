"""The classic pytorch/examples programs, small and on synthetic data, written once against a library `lib` (ember or
torch): VAE, DCGAN, actor-critic and REINFORCE, the word language model (RNN/LSTM/GRU with tied weights, and the
Transformer), time-sequence prediction (LSTMCell + LBFGS), super-resolution (PixelShuffle), a siamese network
(BCE head, triplet and contrastive losses), forward-forward, GCN (sparse adjacency), the fast-neural-style
transformer net, polynomial regression and the MNIST convnet (Adadelta + StepLR).

Each program is `run(lib, dtype, data, state, wrap) -> (record, state)`: it builds its modules (loading `state`, a
name -> state_dict of NumPy arrays, when given: torch's initial weights copied into ember), trains a few steps the
way the original does and records losses, outputs, first-step gradients and the final parameters. `wrap` is applied
to the callables the original would hand to torch.compile (the model, and the loss where there is one): identity for
eager runs, ember.compile for the compiled ones. Randomness is passed in as data (noise, sampled actions, random
permutations) and dropout is either p=0 or run in eval mode, so both libraries see the same numbers.
"""

from __future__ import annotations

import math
import warnings
from collections import namedtuple

import numpy as np


def _np(t):
    return t.detach().cpu().numpy() if hasattr(t, "detach") else np.asarray(t)


class Record(dict):
    """Named NumPy copies of what a program produced, in the order it produced them."""

    def add(self, key, value):
        self[key] = np.array(_np(value), copy=True)

    def grads(self, prefix, module):
        for name, p in module.named_parameters():
            self[f"grad:{prefix}.{name}"] = None if p.grad is None else _np(p.grad).copy()

    def params(self, prefix, module):
        for name, p in module.named_parameters():
            self[f"param:{prefix}.{name}"] = _np(p).copy()
        for name, b in module.named_buffers():
            self[f"buffer:{prefix}.{name}"] = _np(b).copy()


def setup(lib, dtype, modules, state):
    """Cast the modules to `dtype`; load `state` into them, or return their own initial state."""
    for module in modules.values():
        module.to(getattr(lib, dtype))
    if state is None:
        return {name: {k: _np(v).copy() for k, v in m.state_dict().items()} for name, m in modules.items()}
    for name, module in modules.items():
        module.load_state_dict({k: lib.tensor(v) for k, v in state[name].items()})
    return state


def tensors(lib, dtype, *arrays):
    out = []
    for a in arrays:
        a = np.asarray(a)
        out.append(lib.tensor(a.astype(dtype) if a.dtype.kind == "f" else a))
    return out


# ----------------------------------------------------------------------------------------------------------
# vae/main.py
# ----------------------------------------------------------------------------------------------------------


def vae(lib, dtype, data, state, wrap):
    nn, F = lib.nn, lib.nn.functional

    class VAE(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(16, 12)
            self.fc21 = nn.Linear(12, 4)
            self.fc22 = nn.Linear(12, 4)
            self.fc3 = nn.Linear(4, 12)
            self.fc4 = nn.Linear(12, 16)

        def encode(self, x):
            h1 = F.relu(self.fc1(x))
            return self.fc21(h1), self.fc22(h1)

        def reparameterize(self, mu, logvar, eps):
            std = lib.exp(0.5 * logvar)
            return mu + eps * std  # the original draws eps = torch.randn_like(std)

        def decode(self, z):
            h3 = F.relu(self.fc3(z))
            return lib.sigmoid(self.fc4(h3))

        def forward(self, x, eps):
            mu, logvar = self.encode(x.view(-1, 16))
            z = self.reparameterize(mu, logvar, eps)
            return self.decode(z), mu, logvar

    def loss_function(recon_x, x, mu, logvar):
        BCE = F.binary_cross_entropy(recon_x, x.view(-1, 16), reduction="sum")
        KLD = -0.5 * lib.sum(1 + logvar - mu.pow(2) - logvar.exp())
        return BCE + KLD

    model = VAE()
    state = setup(lib, dtype, {"vae": model}, state)
    forward, criterion = wrap(model), wrap(loss_function)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-3)
    record = Record()
    images, noise = data
    for step in range(len(images)):
        x, eps = tensors(lib, dtype, images[step], noise[step])
        model.train()
        optimizer.zero_grad()
        recon_batch, mu, logvar = forward(x, eps)
        loss = criterion(recon_batch, x, mu, logvar)
        loss.backward()
        record[f"loss{step}"] = loss.item() / len(x)
        if step == 0:
            record.add("recon", recon_batch)
            record.grads("vae", model)
        optimizer.step()
    model.eval()
    test_loss = 0
    with lib.no_grad():
        x, eps = tensors(lib, dtype, images[0], noise[0])
        recon_batch, mu, logvar = forward(x, eps)
        test_loss += criterion(recon_batch, x, mu, logvar).item()
        sample = model.decode(eps)  # the original: model.decode(torch.randn(64, 20))
    record["test_loss"] = test_loss
    record.add("sample", sample.view(len(x), 1, 4, 4))
    record.params("vae", model)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# dcgan/main.py
# ----------------------------------------------------------------------------------------------------------


def dcgan(lib, dtype, data, state, wrap):
    nn = lib.nn
    nz, ngf, ndf, nc = 8, 4, 4, 3

    def weights_init(m):
        classname = m.__class__.__name__
        if classname.find("Conv") != -1:
            lib.nn.init.normal_(m.weight, 0.0, 0.02)
        elif classname.find("BatchNorm") != -1:
            lib.nn.init.normal_(m.weight, 1.0, 0.02)
            lib.nn.init.zeros_(m.bias)

    class Generator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
                nn.BatchNorm2d(ngf * 4),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ngf * 2),
                nn.ReLU(True),
                nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
                nn.Tanh(),
            )

        def forward(self, input):
            return self.main(input)

    class Discriminator(nn.Module):
        def __init__(self):
            super().__init__()
            self.main = nn.Sequential(
                nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
                nn.BatchNorm2d(ndf * 2),
                nn.LeakyReLU(0.2, inplace=True),
                nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
                nn.Sigmoid(),
            )

        def forward(self, input):
            return self.main(input).view(-1, 1).squeeze(1)

    netG, netD = Generator(), Discriminator()
    netG.apply(weights_init)
    netD.apply(weights_init)
    state = setup(lib, dtype, {"G": netG, "D": netD}, state)
    G, D = wrap(netG), wrap(netD)
    criterion = nn.BCELoss()
    optimizerD = lib.optim.Adam(netD.parameters(), lr=2e-4, betas=(0.5, 0.999))
    optimizerG = lib.optim.Adam(netG.parameters(), lr=2e-4, betas=(0.5, 0.999))
    real_label, fake_label = 1, 0
    record = Record()
    images, noises = data
    for i in range(len(images)):
        real_cpu, noise = tensors(lib, dtype, images[i], noises[i])
        # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        batch_size = real_cpu.size(0)
        label = lib.full((batch_size,), real_label, dtype=real_cpu.dtype)
        output = D(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()
        fake = G(noise)
        label.fill_(fake_label)
        output = D(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        D_G_z1 = output.mean().item()
        errD = errD_real + errD_fake
        optimizerD.step()
        # (2) Update G network: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = D(fake)
        errG = criterion(output, label)
        errG.backward()
        D_G_z2 = output.mean().item()
        if i == 0:
            record.add("fake", fake)
            record.grads("G", netG)
            record.grads("D", netD)
        optimizerG.step()
        record[f"losses{i}"] = np.array([errD.item(), errG.item(), D_x, D_G_z1, D_G_z2])
    record.params("G", netG)
    record.params("D", netD)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# reinforcement_learning/actor_critic.py and reinforce.py
# ----------------------------------------------------------------------------------------------------------


def _discounted(rewards, gamma):
    R, returns = 0, []
    for r in rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)
    return returns


def actor_critic(lib, dtype, data, state, wrap):
    nn, F = lib.nn, lib.nn.functional
    SavedAction = namedtuple("SavedAction", ["log_prob", "value"])
    eps = np.finfo(np.float32).eps.item()

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 16)
            self.action_head = nn.Linear(16, 2)
            self.value_head = nn.Linear(16, 1)
            self.saved_actions = []
            self.rewards = []

        def forward(self, x):
            x = F.relu(self.affine1(x))
            action_prob = F.softmax(self.action_head(x), dim=-1)
            state_values = self.value_head(x)
            return action_prob, state_values

    model = Policy()
    state = setup(lib, dtype, {"policy": model}, state)
    policy = wrap(model)
    optimizer = lib.optim.Adam(model.parameters(), lr=3e-2)
    record = Record()
    for episode, (states, actions, rewards) in enumerate(zip(*data)):
        for t in range(len(states)):
            s = lib.from_numpy(states[t]).to(getattr(lib, dtype))  # the original: .float()
            probs, state_value = policy(s)
            m = lib.distributions.Categorical(probs)
            action = lib.tensor(actions[t])  # the original: m.sample()
            model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
            model.rewards.append(float(rewards[t]))
        # finish_episode
        saved_actions = model.saved_actions
        policy_losses, value_losses = [], []
        returns = lib.tensor(_discounted(model.rewards, 0.99))
        returns = (returns - returns.mean()) / (returns.std() + eps)
        for (log_prob, value), R in zip(saved_actions, returns):
            advantage = R - value.item()
            policy_losses.append(-log_prob * advantage)
            value_losses.append(F.smooth_l1_loss(value, lib.tensor([R])))
        optimizer.zero_grad()
        loss = lib.stack(policy_losses).sum() + lib.stack(value_losses).sum()
        loss.backward()
        record[f"loss{episode}"] = loss.item()
        if episode == 0:
            record.grads("policy", model)
        optimizer.step()
        del model.rewards[:]
        del model.saved_actions[:]
    record.params("policy", model)
    return record, state


def reinforce(lib, dtype, data, state, wrap):
    nn, F = lib.nn, lib.nn.functional
    eps = np.finfo(np.float32).eps.item()

    class Policy(nn.Module):
        def __init__(self):
            super().__init__()
            self.affine1 = nn.Linear(4, 16)
            self.dropout = nn.Dropout(p=0.6)
            self.affine2 = nn.Linear(16, 2)
            self.saved_log_probs = []
            self.rewards = []

        def forward(self, x):
            x = self.affine1(x)
            x = self.dropout(x)
            x = F.relu(x)
            action_scores = self.affine2(x)
            return F.softmax(action_scores, dim=1)

    model = Policy()
    state = setup(lib, dtype, {"policy": model}, state)
    model.eval()  # dropout off: both libraries see the same numbers
    policy = wrap(model)
    optimizer = lib.optim.Adam(model.parameters(), lr=1e-2)
    record = Record()
    for episode, (states, actions, rewards) in enumerate(zip(*data)):
        for t in range(len(states)):
            s = lib.from_numpy(states[t]).to(getattr(lib, dtype)).unsqueeze(0)
            probs = policy(s)
            m = lib.distributions.Categorical(probs)
            action = lib.tensor([actions[t]])
            model.saved_log_probs.append(m.log_prob(action))
            model.rewards.append(float(rewards[t]))
        returns = lib.tensor(_discounted(model.rewards, 0.99))
        returns = (returns - returns.mean()) / (returns.std() + eps)
        policy_loss = [-log_prob * R for log_prob, R in zip(model.saved_log_probs, returns)]
        optimizer.zero_grad()
        policy_loss = lib.cat(policy_loss).sum()
        policy_loss.backward()
        record[f"loss{episode}"] = policy_loss.item()
        optimizer.step()
        del model.rewards[:]
        del model.saved_log_probs[:]
    record.params("policy", model)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# word_language_model/model.py and main.py
# ----------------------------------------------------------------------------------------------------------


def _language_model(lib, rnn_type, ntoken=20, ninp=8, nhid=8, nlayers=2, dropout=0.0, tie_weights=True):
    nn, F = lib.nn, lib.nn.functional

    class RNNModel(nn.Module):
        """Container module with an encoder, a recurrent module, and a decoder."""

        def __init__(self):
            super().__init__()
            self.ntoken = ntoken
            self.drop = nn.Dropout(dropout)
            self.encoder = nn.Embedding(ntoken, ninp)
            if rnn_type in ["LSTM", "GRU"]:
                self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
            else:
                nonlinearity = {"RNN_TANH": "tanh", "RNN_RELU": "relu"}[rnn_type]
                self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
            self.decoder = nn.Linear(nhid, ntoken)
            if tie_weights:
                self.decoder.weight = self.encoder.weight
            self.init_weights()
            self.rnn_type, self.nhid, self.nlayers = rnn_type, nhid, nlayers

        def init_weights(self):
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def forward(self, input, hidden):
            emb = self.drop(self.encoder(input))
            output, hidden = self.rnn(emb, hidden)
            output = self.drop(output)
            decoded = self.decoder(output)
            decoded = decoded.view(-1, self.ntoken)
            return F.log_softmax(decoded, dim=1), hidden

        def init_hidden(self, bsz):
            weight = next(self.parameters())
            if self.rnn_type == "LSTM":
                return (weight.new_zeros(self.nlayers, bsz, self.nhid), weight.new_zeros(self.nlayers, bsz, self.nhid))
            return weight.new_zeros(self.nlayers, bsz, self.nhid)

    class PositionalEncoding(nn.Module):
        def __init__(self, d_model, dropout=0.1, max_len=64):
            super().__init__()
            self.dropout = nn.Dropout(p=dropout)
            pe = lib.zeros(max_len, d_model)
            position = lib.arange(0, max_len, dtype=lib.float).unsqueeze(1)
            div_term = lib.exp(lib.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
            pe[:, 0::2] = lib.sin(position * div_term)
            pe[:, 1::2] = lib.cos(position * div_term)
            pe = pe.unsqueeze(0).transpose(0, 1)
            self.register_buffer("pe", pe)

        def forward(self, x):
            x = x + self.pe[: x.size(0), :]
            return self.dropout(x)

    class TransformerModel(nn.Module):
        """Container module with an encoder, a recurrent or transformer module, and a decoder."""

        def __init__(self, nhead=2):
            super().__init__()
            self.model_type = "Transformer"
            self.src_mask = None
            self.pos_encoder = PositionalEncoding(ninp, dropout)
            encoder_layers = nn.TransformerEncoderLayer(ninp, nhead, nhid, dropout)
            self.transformer_encoder = nn.TransformerEncoder(encoder_layers, nlayers, enable_nested_tensor=False)
            self.encoder = nn.Embedding(ntoken, ninp)
            self.ninp = ninp
            self.decoder = nn.Linear(ninp, ntoken)
            initrange = 0.1
            nn.init.uniform_(self.encoder.weight, -initrange, initrange)
            nn.init.zeros_(self.decoder.bias)
            nn.init.uniform_(self.decoder.weight, -initrange, initrange)

        def _generate_square_subsequent_mask(self, sz):
            return lib.log(lib.tril(lib.ones(sz, sz)))

        def forward(self, src, has_mask=True):
            if has_mask:
                if self.src_mask is None or self.src_mask.size(0) != len(src):
                    mask = self._generate_square_subsequent_mask(len(src)).to(self.decoder.weight.dtype)
                    self.src_mask = mask
            else:
                self.src_mask = None
            src = self.encoder(src) * math.sqrt(self.ninp)
            src = self.pos_encoder(src)
            output = self.transformer_encoder(src, self.src_mask)
            output = self.decoder(output)
            return F.log_softmax(output, dim=-1)

    return TransformerModel() if rnn_type == "Transformer" else RNNModel()


def language_model(rnn_type, legacy=False):
    """word_language_model/main.py's train(): SGD by hand after clip_grad_norm_, hidden state carried across
    batches (detached), then evaluate() under no_grad in eval mode.  `legacy`: the pre-0.4 version's idioms,
    `Variable(weight.new(...).zero_())` hidden states and the deprecated `p.data.add_(-lr, p.grad.data)`."""

    def run(lib, dtype, data, state, wrap):
        model = _language_model(lib, rnn_type)
        if legacy:
            Variable = lib.autograd.Variable

            def init_hidden(bsz):
                weight = next(model.parameters()).data
                if rnn_type == "LSTM":
                    return (Variable(weight.new(model.nlayers, bsz, model.nhid).zero_()),
                            Variable(weight.new(model.nlayers, bsz, model.nhid).zero_()))
                return Variable(weight.new(model.nlayers, bsz, model.nhid).zero_())

            model.init_hidden = init_hidden
        state = setup(lib, dtype, {"lm": model}, state)
        forward = wrap(model)
        criterion = lib.nn.NLLLoss()
        ntokens, lr, clip, bptt = model.ntoken if rnn_type != "Transformer" else 20, 20.0, 0.25, 5
        train_data, = tensors(lib, dtype, data[0])

        def repackage_hidden(h):
            if isinstance(h, lib.Tensor):
                return h.detach()
            return tuple(repackage_hidden(v) for v in h)

        def get_batch(source, i):
            seq_len = min(bptt, len(source) - 1 - i)
            return source[i:i + seq_len], source[i + 1:i + 1 + seq_len].view(-1)

        record = Record()
        model.train()
        if rnn_type != "Transformer":
            hidden = model.init_hidden(train_data.size(1))
        for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
            source, targets = get_batch(train_data, i)
            model.zero_grad()
            if rnn_type == "Transformer":
                output = forward(source)
                output = output.view(-1, ntokens)
            else:
                hidden = repackage_hidden(hidden)
                output, hidden = forward(source, hidden)
            loss = criterion(output, targets)
            loss.backward()
            record[f"loss{batch}"] = loss.item()
            if batch == 0:
                record.grads("lm", model)
            lib.nn.utils.clip_grad_norm_(model.parameters(), clip)
            for p in model.parameters():
                if legacy:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", UserWarning)  # (torch: "This overload of add_ is deprecated")
                        p.data.add_(-lr, p.grad.data)
                else:
                    p.data.add_(p.grad, alpha=-lr)
        model.eval()
        total_loss = 0.0
        with lib.no_grad():
            source, targets = get_batch(train_data, 0)
            if rnn_type == "Transformer":
                output = forward(source).view(-1, ntokens)
            else:
                output, hidden = forward(source, model.init_hidden(train_data.size(1)))
            total_loss += len(source) * criterion(output, targets).item()
        record["eval_loss"] = total_loss
        record.params("lm", model)
        return record, state

    return run


# ----------------------------------------------------------------------------------------------------------
# time_sequence_prediction/train.py
# ----------------------------------------------------------------------------------------------------------


def time_sequence(lib, dtype, data, state, wrap, hidden=8, steps=2):
    nn = lib.nn

    class Sequence(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm1 = nn.LSTMCell(1, hidden)
            self.lstm2 = nn.LSTMCell(hidden, hidden)
            self.linear = nn.Linear(hidden, 1)

        def forward(self, input, future=0):
            outputs = []
            h_t = lib.zeros(input.size(0), hidden, dtype=lib.double)
            c_t = lib.zeros(input.size(0), hidden, dtype=lib.double)
            h_t2 = lib.zeros(input.size(0), hidden, dtype=lib.double)
            c_t2 = lib.zeros(input.size(0), hidden, dtype=lib.double)
            for input_t in input.split(1, dim=1):
                h_t, c_t = self.lstm1(input_t, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            for _ in range(future):  # if we should predict the future
                h_t, c_t = self.lstm1(output, (h_t, c_t))
                h_t2, c_t2 = self.lstm2(h_t, (h_t2, c_t2))
                output = self.linear(h_t2)
                outputs += [output]
            return lib.cat(outputs, dim=1)

    seq = Sequence()
    seq.double()
    state = setup(lib, "float64", {"seq": seq}, state)
    model = wrap(seq)
    series, = tensors(lib, "float64", data[0])
    input, target = series[3:, :-1], series[3:, 1:]
    test_input, test_target = series[:3, :-1], series[:3, 1:]
    criterion = nn.MSELoss()
    optimizer = lib.optim.LBFGS(seq.parameters(), lr=0.8)
    record = Record()
    for i in range(steps):
        losses = []

        def closure():
            optimizer.zero_grad()
            out = model(input)
            loss = criterion(out, target)
            losses.append(loss.item())
            loss.backward()
            return loss

        optimizer.step(closure)
        record[f"losses{i}"] = np.array(losses)
        with lib.no_grad():
            future = 5
            pred = model(test_input, future=future)
            loss = criterion(pred[:, :-future], test_target)
            record[f"test_loss{i}"] = loss.item()
            record.add(f"pred{i}", pred.detach())
    record.params("seq", seq)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# super_resolution/model.py and main.py
# ----------------------------------------------------------------------------------------------------------


def super_resolution(lib, dtype, data, state, wrap, upscale_factor=2):
    nn, init = lib.nn, lib.nn.init

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.relu = nn.ReLU()
            self.conv1 = nn.Conv2d(1, 8, (5, 5), (1, 1), (2, 2))
            self.conv2 = nn.Conv2d(8, 8, (3, 3), (1, 1), (1, 1))
            self.conv3 = nn.Conv2d(8, 4, (3, 3), (1, 1), (1, 1))
            self.conv4 = nn.Conv2d(4, upscale_factor ** 2, (3, 3), (1, 1), (1, 1))
            self.pixel_shuffle = nn.PixelShuffle(upscale_factor)
            self._initialize_weights()

        def forward(self, x):
            x = self.relu(self.conv1(x))
            x = self.relu(self.conv2(x))
            x = self.relu(self.conv3(x))
            return self.pixel_shuffle(self.conv4(x))

        def _initialize_weights(self):
            init.orthogonal_(self.conv1.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv2.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv3.weight, init.calculate_gain("relu"))
            init.orthogonal_(self.conv4.weight)

    net = Net()
    state = setup(lib, dtype, {"net": net}, state)
    model = wrap(net)
    criterion = nn.MSELoss()
    optimizer = lib.optim.Adam(net.parameters(), lr=0.01)
    record = Record()
    inputs, targets = data
    for iteration in range(len(inputs)):
        input, target = tensors(lib, dtype, inputs[iteration], targets[iteration])
        optimizer.zero_grad()
        out = model(input)
        loss = criterion(out, target)
        record[f"loss{iteration}"] = loss.item()
        loss.backward()
        if iteration == 0:
            record.add("out", out)
            record.grads("net", net)
        optimizer.step()
    with lib.no_grad():
        input, target = tensors(lib, dtype, inputs[0], targets[0])
        mse = criterion(model(input), target)
        record["psnr"] = 10 * math.log10(1 / mse.item())
    record.params("net", net)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# siamese_network/main.py (a small conv backbone in place of resnet18), and the triplet / contrastive losses
# ----------------------------------------------------------------------------------------------------------


def siamese(lib, dtype, data, state, wrap):
    nn, F = lib.nn, lib.nn.functional

    class SiameseNetwork(nn.Module):
        def __init__(self):
            super().__init__()
            self.backbone = nn.Sequential(
                nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
                nn.AdaptiveAvgPool2d((2, 2)),
            )
            self.fc_in_features = 16
            self.fc = nn.Sequential(
                nn.Linear(self.fc_in_features * 2, 8), nn.ReLU(inplace=True), nn.Linear(8, 1),
            )
            self.sigmoid = nn.Sigmoid()
            self.fc.apply(self.init_weights)

        def init_weights(self, m):
            if isinstance(m, nn.Linear):
                lib.nn.init.xavier_uniform_(m.weight)
                m.bias.data.fill_(0.01)

        def forward_once(self, x):
            output = self.backbone(x)
            return output.view(output.size()[0], -1)

        def forward(self, input1, input2):
            output1 = self.forward_once(input1)
            output2 = self.forward_once(input2)
            output = lib.cat((output1, output2), 1)
            output = self.fc(output)
            return self.sigmoid(output)

    net = SiameseNetwork()
    state = setup(lib, dtype, {"net": net}, state)
    model = wrap(net)
    optimizer = lib.optim.Adadelta(net.parameters(), lr=1.0)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    criterion = nn.BCELoss()
    triplet = nn.TripletMarginLoss(margin=1.0, p=2)

    def contrastive(o1, o2, label, margin=2.0):
        distance = F.pairwise_distance(o1, o2, keepdim=True)
        return lib.mean((1 - label) * lib.pow(distance, 2) + label * lib.pow(lib.clamp(margin - distance, min=0.0), 2))

    record = Record()
    firsts, seconds, thirds, labels = data
    for epoch in range(len(firsts)):
        net.train()
        images_1, images_2, images_3, targets = tensors(lib, dtype, firsts[epoch], seconds[epoch], thirds[epoch],
                                                         labels[epoch])
        optimizer.zero_grad()
        outputs = model(images_1, images_2).squeeze()
        loss = criterion(outputs, targets)
        e1, e2, e3 = net.forward_once(images_1), net.forward_once(images_2), net.forward_once(images_3)
        loss = loss + 0.1 * triplet(e1, e2, e3) + 0.1 * contrastive(e1, e2, targets.unsqueeze(1))
        loss.backward()
        record[f"loss{epoch}"] = loss.item()
        if epoch == 0:
            record.grads("net", net)
        optimizer.step()
        scheduler.step()
        record[f"lr{epoch}"] = scheduler.get_last_lr()[0]
    net.eval()
    with lib.no_grad():
        images_1, images_2, targets = tensors(lib, dtype, firsts[0], seconds[0], labels[0])
        outputs = model(images_1, images_2).squeeze()
        record["test_loss"] = criterion(outputs, targets).sum().item()
        pred = lib.where(outputs > 0.5, 1, 0)
        record["correct"] = pred.eq(targets.view_as(pred)).sum().item()
    record.params("net", net)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# mnist_forward_forward/main.py
# ----------------------------------------------------------------------------------------------------------


def forward_forward(lib, dtype, data, state, wrap, num_epochs=4):
    nn = lib.nn

    def overlay_y_on_x(x, y):
        x_ = x.clone()
        x_[:, :10] *= 0.0
        x_[range(x.shape[0]), y] = x.max()
        return x_

    class Layer(nn.Linear):
        def __init__(self, in_features, out_features, bias=True, device=None, dtype=None):
            super().__init__(in_features, out_features, bias, device, dtype)
            self.relu = lib.nn.ReLU()
            self.threshold = 2.0
            self.num_epochs = num_epochs

        def forward(self, x):
            x_direction = x / (x.norm(2, 1, keepdim=True) + 1e-4)
            return self.relu(lib.mm(x_direction, self.weight.T) + self.bias.unsqueeze(0))

        def train(self, x_pos, x_neg):  # (overrides Module.train, as the original does)
            self.opt = lib.optim.Adam(self.parameters(), lr=0.03)
            step = wrap(self.forward)
            for _ in range(self.num_epochs):
                g_pos = step(x_pos).pow(2).mean(1)
                g_neg = step(x_neg).pow(2).mean(1)
                loss = lib.log(1 + lib.exp(lib.cat([-g_pos + self.threshold, g_neg - self.threshold]))).mean()
                self.opt.zero_grad()
                loss.backward()
                self.losses.append(loss.item())
                self.opt.step()
            return self.forward(x_pos).detach(), self.forward(x_neg).detach()

    class Net(nn.Module):
        def __init__(self, dims):
            super().__init__()
            self.layers = nn.ModuleList(Layer(dims[d], dims[d + 1]) for d in range(len(dims) - 1))

        def predict(self, x):
            goodness_per_label = []
            for label in range(10):
                h = overlay_y_on_x(x, label)
                goodness = []
                for layer in self.layers:
                    h = layer(h)
                    goodness += [h.pow(2).mean(1)]
                goodness_per_label += [sum(goodness).unsqueeze(1)]
            goodness_per_label = lib.cat(goodness_per_label, 1)
            return goodness_per_label.argmax(1)

        def train(self, x_pos, x_neg):
            h_pos, h_neg = x_pos, x_neg
            for layer in self.layers:
                layer.losses = []
                h_pos, h_neg = layer.train(h_pos, h_neg)

    net = Net([20, 12, 12])
    state = setup(lib, dtype, {"net": net}, state)
    x, y, perm = data
    x, y, perm = tensors(lib, dtype, x, y, perm)
    x_pos = overlay_y_on_x(x, y)
    x_neg = overlay_y_on_x(x, y[perm])  # the original: y[torch.randperm(x.size(0))]
    net.train(x_pos, x_neg)
    record = Record()
    for index, layer in enumerate(net.layers):
        record[f"losses{index}"] = np.array(layer.losses)
    record["train_error"] = 1.0 - net.predict(x).eq(y).float().mean().item()
    record.params("net", net)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# gcn/main.py (torch.spmm over a sparse normalised adjacency; the features sparse too)
# ----------------------------------------------------------------------------------------------------------


def gcn(lib, dtype, data, state, wrap, epochs=4, dense=False):
    nn, F = lib.nn, lib.nn.functional

    class GraphConv(nn.Module):
        def __init__(self, input_dim, output_dim, use_bias=False):
            super().__init__()
            self.kernel = nn.Parameter(lib.Tensor(input_dim, output_dim))
            nn.init.xavier_normal_(self.kernel)
            self.bias = None
            if use_bias:
                self.bias = nn.Parameter(lib.Tensor(output_dim))
                nn.init.zeros_(self.bias)

        def forward(self, input_tensor, adj_mat):
            support = lib.mm(input_tensor, self.kernel)
            output = lib.spmm(adj_mat, support)
            if self.bias is not None:
                output = output + self.bias
            return output

    class GCN(nn.Module):
        def __init__(self, input_dim, hidden_dim, output_dim, use_bias=True, dropout_p=0.1):
            super().__init__()
            self.gc1 = GraphConv(input_dim, hidden_dim, use_bias=use_bias)
            self.gc2 = GraphConv(hidden_dim, output_dim, use_bias=use_bias)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input_tensor, adj_mat):
            x = self.gc1(input_tensor, adj_mat)
            x = F.relu(x)
            x = self.dropout(x)
            x = self.gc2(x, adj_mat)
            return F.log_softmax(x, dim=1)

    content, edges, labels, idx = data
    V = len(content)
    features = lib.tensor(content.astype(dtype))
    scale_vector = lib.sum(features, dim=1)
    scale_vector = 1 / scale_vector
    scale_vector[scale_vector == float("inf")] = 0
    scale_vector = lib.diag(scale_vector).to_sparse()
    features = scale_vector @ features
    labels = lib.LongTensor(labels)
    E = edges.shape[0]
    adj_mat = lib.sparse_coo_tensor(edges.T, lib.ones(E), (V, V), dtype=lib.int64)
    adj_mat = lib.eye(V) + adj_mat
    degree_mat = lib.sum(adj_mat, dim=1)
    degree_mat = lib.sqrt(1 / degree_mat)
    degree_mat[degree_mat == float("inf")] = 0
    degree_mat = lib.diag(degree_mat).to_sparse()
    adj_mat = degree_mat @ adj_mat @ degree_mat
    features, adj_mat = features.to_sparse().to(getattr(lib, dtype)), adj_mat.to_sparse().to(getattr(lib, dtype))
    if dense:  # the same program on dense tensors (torch.spmm takes those too): what ember.compile captures
        features, adj_mat = features.to_dense(), adj_mat.to_dense()
    idx = lib.tensor(idx)
    idx_val, idx_train = idx[:4], idx[4:]

    gcn_model = GCN(features.shape[1], 8, labels.max().item() + 1, True, 0.0)
    state = setup(lib, dtype, {"gcn": gcn_model}, state)
    model = wrap(gcn_model)
    optimizer = lib.optim.Adam(gcn_model.parameters(), lr=0.01, weight_decay=5e-4)
    criterion = nn.NLLLoss()

    def test(mask):
        gcn_model.eval()
        with lib.no_grad():
            output = model(features, adj_mat)
            output, target = output[mask], labels[mask]
            loss = criterion(output, target)
            acc = (output.argmax(dim=1) == target).float().sum() / len(target)
        return loss.item(), acc.item()

    record = Record()
    for epoch in range(epochs):
        gcn_model.train()
        optimizer.zero_grad()
        output = model(features, adj_mat)
        loss = criterion(output[idx_train], labels[idx_train])
        loss.backward()
        if epoch == 0:
            record.add("output", output)
            record.grads("gcn", gcn_model)
        optimizer.step()
        record[f"train{epoch}"] = np.array(test(idx_train))
        record[f"val{epoch}"] = np.array(test(idx_val))
    record.params("gcn", gcn_model)
    return record, state

"""More pytorch/examples programs for test_examples_r16.py (see _examples.py for the conventions): the
fast-neural-style transformer net, polynomial regression and the MNIST convnet."""

from __future__ import annotations

from collections import namedtuple

import numpy as np
from _examples import Record, setup, tensors

# ----------------------------------------------------------------------------------------------------------
# fast_neural_style/neural_style/transformer_net.py, utils.py and the training step of neural_style.py
# (a two-stage conv net stands in for VGG16's relu1_2 .. relu4_3 features)
# ----------------------------------------------------------------------------------------------------------


def fast_neural_style(lib, dtype, data, state, wrap, content_weight=1e5, style_weight=1e10):
    nn = lib.nn

    class ConvLayer(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride):
            super().__init__()
            self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            return self.conv2d(self.reflection_pad(x))

    class ResidualBlock(nn.Module):
        def __init__(self, channels):
            super().__init__()
            self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
            self.in1 = nn.InstanceNorm2d(channels, affine=True)
            self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
            self.in2 = nn.InstanceNorm2d(channels, affine=True)
            self.relu = nn.ReLU()

        def forward(self, x):
            residual = x
            out = self.relu(self.in1(self.conv1(x)))
            out = self.in2(self.conv2(out))
            return out + residual

    class UpsampleConvLayer(nn.Module):
        def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
            super().__init__()
            self.upsample = upsample
            self.reflection_pad = nn.ReflectionPad2d(kernel_size // 2)
            self.conv2d = nn.Conv2d(in_channels, out_channels, kernel_size, stride)

        def forward(self, x):
            x_in = x
            if self.upsample:
                x_in = nn.functional.interpolate(x_in, mode="nearest", scale_factor=self.upsample)
            return self.conv2d(self.reflection_pad(x_in))

    class TransformerNet(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = ConvLayer(3, 4, kernel_size=9, stride=1)
            self.in1 = nn.InstanceNorm2d(4, affine=True)
            self.conv2 = ConvLayer(4, 8, kernel_size=3, stride=2)
            self.in2 = nn.InstanceNorm2d(8, affine=True)
            self.res1 = ResidualBlock(8)
            self.res2 = ResidualBlock(8)
            self.deconv1 = UpsampleConvLayer(8, 4, kernel_size=3, stride=1, upsample=2)
            self.in4 = nn.InstanceNorm2d(4, affine=True)
            self.deconv3 = ConvLayer(4, 3, kernel_size=9, stride=1)
            self.relu = nn.ReLU()

        def forward(self, X):
            y = self.relu(self.in1(self.conv1(X)))
            y = self.relu(self.in2(self.conv2(y)))
            y = self.res2(self.res1(y))
            y = self.relu(self.in4(self.deconv1(y)))
            return self.deconv3(y)

    class Vgg(nn.Module):
        def __init__(self):
            super().__init__()
            self.slice1 = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(inplace=True))
            self.slice2 = nn.Sequential(nn.MaxPool2d(2, 2), nn.Conv2d(4, 6, 3, padding=1), nn.ReLU(inplace=True))
            for param in self.parameters():
                param.requires_grad = False

        def forward(self, X):
            h_relu1_2 = self.slice1(X)
            h_relu2_2 = self.slice2(h_relu1_2)
            vgg_outputs = namedtuple("VggOutputs", ["relu1_2", "relu2_2"])
            return vgg_outputs(h_relu1_2, h_relu2_2)

    def gram_matrix(y):
        (b, ch, h, w) = y.size()
        features = y.view(b, ch, w * h)
        features_t = features.transpose(1, 2)
        return features.bmm(features_t) / (ch * h * w)

    def normalize_batch(batch):
        mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
        std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
        batch = batch.div_(255.0)
        return (batch - mean) / std

    transformer, vgg = TransformerNet(), Vgg()
    state = setup(lib, dtype, {"transformer": transformer, "vgg": vgg}, state)
    net, features_of = wrap(transformer), wrap(vgg)
    optimizer = lib.optim.Adam(transformer.parameters(), 1e-3)
    mse_loss = nn.MSELoss()
    images, style_image = data
    style, = tensors(lib, dtype, style_image)
    style = style.repeat(images.shape[1], 1, 1, 1)
    features_style = features_of(normalize_batch(style))
    gram_style = [gram_matrix(y) for y in features_style]
    record = Record()
    transformer.train()
    for batch_id in range(len(images)):
        x, = tensors(lib, dtype, images[batch_id])
        n_batch = len(x)
        optimizer.zero_grad()
        y = net(x)
        y = normalize_batch(y)
        x = normalize_batch(x)
        features_y = features_of(y)
        features_x = features_of(x)
        content_loss = content_weight * mse_loss(features_y.relu2_2, features_x.relu2_2)
        style_loss = 0.0
        for ft_y, gm_s in zip(features_y, gram_style):
            gm_y = gram_matrix(ft_y)
            style_loss += mse_loss(gm_y, gm_s[:n_batch, :, :])
        style_loss *= style_weight
        total_loss = content_loss + style_loss
        total_loss.backward()
        record[f"losses{batch_id}"] = np.array([content_loss.item(), style_loss.item()])
        if batch_id == 0:
            record.add("y", y)
            record.grads("transformer", transformer)
        optimizer.step()
    transformer.eval()
    with lib.no_grad():
        x, = tensors(lib, dtype, images[0])
        record.add("stylized", net(x).clamp(0, 255))
    record.params("transformer", transformer)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# regression/main.py
# ----------------------------------------------------------------------------------------------------------


def regression(lib, dtype, data, state, wrap, POLY_DEGREE=4):
    F = lib.nn.functional
    W_target, b_target, randoms = data
    W_target, b_target = tensors(lib, dtype, W_target, b_target)

    def make_features(x):
        """Builds features i.e. a matrix with columns [x, x^2, x^3, x^4]."""
        x = x.unsqueeze(1)
        return lib.cat([x ** i for i in range(1, POLY_DEGREE + 1)], 1)

    def f(x):
        return x.mm(W_target) + b_target.item()

    def poly_desc(W, b):
        result = "y = "
        for i, w in enumerate(W):
            result += "{:+.2f} x^{} ".format(w, i + 1)  # noqa: UP032  (the original's str.format of tensors)
        result += "{:+.2f}".format(b[0])  # noqa: UP032
        return result

    def get_batch(random):
        x = make_features(random)
        return x, f(x)

    fc = lib.nn.Linear(W_target.size(0), 1)
    state = setup(lib, dtype, {"fc": fc}, state)
    model = wrap(fc)
    loss_fn = wrap(F.smooth_l1_loss)
    record = Record()
    for batch_idx, random in enumerate(randoms):
        batch_x, batch_y = get_batch(*tensors(lib, dtype, random))
        fc.zero_grad()
        output = loss_fn(model(batch_x), batch_y)
        loss = output.item()
        output.backward()
        for param in fc.parameters():
            param.data.add_(-0.1 * param.grad)
        record[f"loss{batch_idx}"] = loss
    record["learned"] = poly_desc(fc.weight.view(-1), fc.bias)
    record["actual"] = poly_desc(W_target.view(-1), b_target)
    record.params("fc", fc)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# mnist/main.py (Adadelta + StepLR; dropout layers in eval mode so both libraries agree)
# ----------------------------------------------------------------------------------------------------------


def mnist(lib, dtype, data, state, wrap):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 4, 3, 1)
            self.conv2 = nn.Conv2d(4, 8, 3, 1)
            self.dropout1 = nn.Dropout(0.25)
            self.dropout2 = nn.Dropout(0.5)
            self.fc1 = nn.Linear(72, 16)
            self.fc2 = nn.Linear(16, 10)

        def forward(self, x):
            x = self.conv1(x)
            x = F.relu(x)
            x = self.conv2(x)
            x = F.relu(x)
            x = F.max_pool2d(x, 2)
            x = self.dropout1(x)
            x = lib.flatten(x, 1)
            x = self.fc1(x)
            x = F.relu(x)
            x = self.dropout2(x)
            x = self.fc2(x)
            return F.log_softmax(x, dim=1)

    net = Net()
    state = setup(lib, dtype, {"net": net}, state)
    model = wrap(net)
    optimizer = lib.optim.Adadelta(net.parameters(), lr=1.0)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    images, targets = data
    record = Record()
    for epoch in range(len(images)):
        net.eval()  # (the original trains in train mode: dropout)
        x, target = tensors(lib, dtype, images[epoch], targets[epoch])
        optimizer.zero_grad()
        output = model(x)
        loss = F.nll_loss(output, target)
        loss.backward()
        record[f"loss{epoch}"] = loss.item()
        if epoch == 0:
            record.grads("net", net)
        optimizer.step()
        scheduler.step()
        test_loss, correct = 0, 0
        with lib.no_grad():
            output = model(x)
            test_loss += F.nll_loss(output, target, reduction="sum").item()
            pred = output.argmax(dim=1, keepdim=True)
            correct += pred.eq(target.view_as(pred)).sum().item()
        record[f"test{epoch}"] = np.array([test_loss, correct, scheduler.get_last_lr()[0]])
    record.params("net", net)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# imagenet/main.py: SGD with momentum and weight decay, StepLR, top-k accuracy, and a checkpoint round trip
# (torch.save of model/optimizer/scheduler state, loaded into fresh ones that then keep training)
# ----------------------------------------------------------------------------------------------------------


def imagenet(lib, dtype, data, state, wrap, lr=0.1):
    import io

    nn = lib.nn

    def accuracy(output, target, topk=(1,)):
        """Computes the accuracy over the k top predictions for the specified values of k"""
        with lib.no_grad():
            maxk = max(topk)
            batch_size = target.size(0)
            _, pred = output.topk(maxk, 1, True, True)
            pred = pred.t()
            correct = pred.eq(target.view(1, -1).expand_as(pred))
            res = []
            for k in topk:
                correct_k = correct[:k].reshape(-1).float().sum(0, keepdim=True)
                res.append(correct_k.mul_(100.0 / batch_size))
            return res

    def make():
        return nn.Sequential(
            nn.Conv2d(3, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(), nn.Linear(4, 6),
        )

    def optimizers(model):
        optimizer = lib.optim.SGD(model.parameters(), lr, momentum=0.9, weight_decay=1e-4)
        return optimizer, lib.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)

    model = make()
    state = setup(lib, dtype, {"model": model}, state)
    criterion = nn.CrossEntropyLoss()
    optimizer, scheduler = optimizers(model)
    images, targets = data
    record = Record()
    best = 0.0
    for epoch in range(len(images)):
        if epoch == 2:  # save_checkpoint, then resume from it as `--resume` does
            buffer = io.BytesIO()
            lib.save({"epoch": epoch, "state_dict": model.state_dict(), "best_acc1": best,
                      "optimizer": optimizer.state_dict(), "scheduler": scheduler.state_dict()}, buffer)
            buffer.seek(0)
            checkpoint = lib.load(buffer)
            model = make().to(getattr(lib, dtype))
            model.load_state_dict(checkpoint["state_dict"])
            optimizer, scheduler = optimizers(model)
            optimizer.load_state_dict(checkpoint["optimizer"])
            scheduler.load_state_dict(checkpoint["scheduler"])
            best = checkpoint["best_acc1"]
        forward = wrap(model)
        model.train()
        x, target = tensors(lib, dtype, images[epoch], targets[epoch])
        output = forward(x)
        loss = criterion(output, target)
        acc1, acc5 = accuracy(output, target, topk=(1, 5))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        record[f"epoch{epoch}"] = np.array([loss.item(), acc1[0].item(), acc5[0].item(), scheduler.get_last_lr()[0]])
        model.eval()
        with lib.no_grad():
            best = max(best, accuracy(forward(x), target)[0].item())
        record[f"best{epoch}"] = best
    record.params("model", model)
    return record, state


# ----------------------------------------------------------------------------------------------------------
# mnist_rnn/main.py: a batch-first LSTM read at its last step, BatchNorm1d, Adadelta + StepLR
# ----------------------------------------------------------------------------------------------------------


def mnist_rnn(lib, dtype, data, state, wrap):
    nn, F = lib.nn, lib.nn.functional

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(input_size=6, hidden_size=8, batch_first=True)
            self.batchnorm = nn.BatchNorm1d(8)
            self.dropout1 = nn.Dropout2d(0.25)
            self.dropout2 = nn.Dropout2d(0.5)
            self.fc1 = nn.Linear(8, 8)
            self.fc2 = nn.Linear(8, 10)

        def forward(self, input):
            input = input.reshape(-1, 6, 6)  # (batch, seq, feature)
            output, hidden = self.rnn(input)
            output = output[:, -1, :]
            output = self.batchnorm(output)
            output = self.dropout1(output)
            output = self.fc1(output)
            output = F.relu(output)
            output = self.dropout2(output)
            output = self.fc2(output)
            return F.log_softmax(output, dim=1)

    net = Net()
    state = setup(lib, dtype, {"net": net}, state)
    model = wrap(net)
    optimizer = lib.optim.Adadelta(net.parameters(), lr=0.1)
    scheduler = lib.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)
    images, targets = data
    record = Record()
    for epoch in range(len(images)):
        net.train()
        net.dropout1.eval()  # (dropout off: both libraries see the same numbers; BatchNorm stays in train mode)
        net.dropout2.eval()
        x, target = tensors(lib, dtype, images[epoch], targets[epoch])
        optimizer.zero_grad()
        output = model(x)
        loss = F.nll_loss(output, target)
        loss.backward()
        record[f"loss{epoch}"] = loss.item()
        if epoch == 0:
            record.grads("net", net)
        optimizer.step()
        scheduler.step()
    net.eval()
    with lib.no_grad():
        x, target = tensors(lib, dtype, images[0], targets[0])
        output = model(x)
        record["test_loss"] = F.nll_loss(output, target, reduction="sum").item()
        record.add("output", output)
    record.params("net", net)
    return record, state

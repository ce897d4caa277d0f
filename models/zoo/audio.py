"""Keyword spotters and audio front ends as their reference code writes them: a TC-ResNet
(conv1d over time, BatchNorm1d), an M5 raw-waveform net (conv1d, max_pool1d), GRU and LSTM
spotters over MFCC frames, and a CRNN (conv2d then GRU)."""

import torch
from torch import nn
from torch.nn import functional as F

from zoo_common import trained_batchnorm_statistics


class TCResBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv1d(cin, cout, 9, stride, 4, bias=False)
        self.bn1 = nn.BatchNorm1d(cout)
        self.conv2 = nn.Conv1d(cout, cout, 9, 1, 4, bias=False)
        self.bn2 = nn.BatchNorm1d(cout)
        self.shortcut = None
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv1d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm1d(cout), nn.ReLU(inplace=True))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)), inplace=True)
        out = self.bn2(self.conv2(out))
        identity = x if self.shortcut is None else self.shortcut(x)
        out += identity
        return F.relu(out, inplace=True)


class TCResNet8(nn.Module):
    """Temporal-convolution ResNet (Choi et al. 2019): MFCC [B, 40, T] with the coefficients
    as channels, conv1d along time."""

    def __init__(self, n_mfcc=40, widths=(16, 24, 32, 48), num_classes=12):
        super().__init__()
        self.conv = nn.Conv1d(n_mfcc, widths[0], 3, 1, 1, bias=False)
        self.blocks = nn.Sequential(*[TCResBlock(a, b, 2) for a, b in zip(widths, widths[1:])])
        self.dropout = nn.Dropout(0.5)
        self.fc = nn.Linear(widths[-1], num_classes)

    def forward(self, mfcc):
        x = self.blocks(self.conv(mfcc))
        x = F.adaptive_avg_pool1d(x, 1).squeeze(-1)
        return self.fc(self.dropout(x))


def tc_resnet8() -> nn.Module:
    torch.manual_seed(0)
    return trained_batchnorm_statistics(TCResNet8())


class M5(nn.Module):
    """M5 (Dai et al. 2017) on a raw waveform [B, 1, samples], as in torchaudio's tutorial."""

    def __init__(self, n_channel=32, num_classes=12):
        super().__init__()
        self.conv1 = nn.Conv1d(1, n_channel, kernel_size=80, stride=16)
        self.bn1 = nn.BatchNorm1d(n_channel)
        self.pool1 = nn.MaxPool1d(4)
        self.conv2 = nn.Conv1d(n_channel, n_channel, kernel_size=3)
        self.bn2 = nn.BatchNorm1d(n_channel)
        self.pool2 = nn.MaxPool1d(4)
        self.conv3 = nn.Conv1d(n_channel, 2 * n_channel, kernel_size=3)
        self.bn3 = nn.BatchNorm1d(2 * n_channel)
        self.pool3 = nn.MaxPool1d(4)
        self.fc1 = nn.Linear(2 * n_channel, num_classes)

    def forward(self, x):
        x = self.pool1(F.relu(self.bn1(self.conv1(x))))
        x = self.pool2(F.relu(self.bn2(self.conv2(x))))
        x = self.pool3(F.relu(self.bn3(self.conv3(x))))
        x = F.avg_pool1d(x, x.shape[-1]).permute(0, 2, 1)
        return F.log_softmax(self.fc1(x), dim=2)


def m5() -> nn.Module:
    torch.manual_seed(0)
    return trained_batchnorm_statistics(M5())


class RecurrentKWS(nn.Module):
    """MFCC frames [B, T, 10] -> a recurrent layer (batch_first) -> the last step -> classes."""

    def __init__(self, cell="gru", hidden=64, layers=1, num_classes=12):
        super().__init__()
        rnn = nn.GRU if cell == "gru" else nn.LSTM
        self.rnn = rnn(10, hidden, num_layers=layers, batch_first=True)
        self.dropout = nn.Dropout(0.1)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, mfcc):
        out, _ = self.rnn(mfcc)
        return self.fc(self.dropout(out[:, -1, :]))


def gru_kws() -> nn.Module:
    torch.manual_seed(0)
    return RecurrentKWS("gru").eval()


def lstm_kws() -> nn.Module:
    """Two stacked LSTM layers, as the Hello Edge LSTM keyword spotter."""
    torch.manual_seed(0)
    return RecurrentKWS("lstm", hidden=48, layers=2).eval()


class CRNN(nn.Module):
    """Conv2d feature extractor over [B, 1, T, F] MFCCs, then a GRU over time (time-major),
    with an explicit zero initial state as many scripts write it."""

    def __init__(self, hidden=48, num_classes=12):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, 16, (5, 3), (2, 1), (2, 1)), nn.BatchNorm2d(16),
                                  nn.ReLU(inplace=True))
        self.gru = nn.GRU(16 * 10, hidden)
        self.fc = nn.Linear(hidden, num_classes)

    def forward(self, mfcc):
        x = self.conv(mfcc)  # [B, 16, T/2, 10]
        b, c, t, f = x.shape
        x = x.permute(2, 0, 1, 3).reshape(t, b, c * f)
        h0 = torch.zeros(1, b, self.gru.hidden_size)
        out, h = self.gru(x, h0)
        return self.fc(h[-1])


def crnn() -> nn.Module:
    torch.manual_seed(0)
    return trained_batchnorm_statistics(CRNN())


class LogMelKWS(nn.Module):
    """A waveform in, a log-mel spectrogram computed inside the model with torch.stft (complex
    tensors, written in real operators by normalisation: pipeline/normalise/spectral.py)."""

    def __init__(self, num_classes=12):
        super().__init__()
        self.register_buffer("window", torch.hann_window(256))
        self.register_buffer("mel", torch.rand(129, 20))
        self.fc = nn.Linear(20, num_classes)

    def forward(self, wave):
        spec = torch.stft(wave, 256, 128, window=self.window, return_complex=True)
        power = spec.abs().pow(2).transpose(1, 2)
        return self.fc(torch.log(power @ self.mel + 1e-6).mean(1))


def logmel_kws() -> nn.Module:
    torch.manual_seed(0)
    return LogMelKWS().eval()

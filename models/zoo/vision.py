"""Image classifiers as torchvision and timm write them: ResNet-18, MobileNetV3-Small,
EfficientNet-B0, MobileNetV2 and SqueezeNet (random weights, 10-100 classes, small inputs)."""

from functools import partial

import torch
from torch import nn

from zoo_common import trained_batchnorm_statistics


# --- ResNet (torchvision.models.resnet) -------------------------------------------------------
class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x
        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)
        out = self.conv2(out)
        out = self.bn2(out)
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class ResNet(nn.Module):
    def __init__(self, layers=(2, 2, 2, 2), widths=(64, 128, 256, 512), num_classes=1000):
        super().__init__()
        self.inplanes = widths[0]
        self.conv1 = nn.Conv2d(3, self.inplanes, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(widths[0], layers[0])
        self.layer2 = self._make_layer(widths[1], layers[1], stride=2)
        self.layer3 = self._make_layer(widths[2], layers[2], stride=2)
        self.layer4 = self._make_layer(widths[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(widths[3], num_classes)

    def _make_layer(self, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes)
            )
        layers = [BasicBlock(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes
        layers += [BasicBlock(planes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


def resnet18(num_classes: int = 10) -> nn.Module:
    """ResNet-18's layer list at a quarter of its width (16..128 channels)."""
    torch.manual_seed(0)
    return trained_batchnorm_statistics(ResNet((2, 2, 2, 2), (16, 32, 64, 128), num_classes))


# --- MobileNetV3 (torchvision.models.mobilenetv3) ---------------------------------------------
def _make_divisible(v, divisor=8):
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeeze, activation=nn.ReLU, scale_activation=nn.Hardsigmoid):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = activation()
        self.scale_activation = scale_activation()

    def forward(self, x):
        scale = self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x)))))
        return scale * x


def _conv_bn_act(cin, cout, k, stride=1, groups=1, act=nn.ReLU):
    layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout, eps=0.001, momentum=0.01)]
    if act is not None:
        layers.append(act(inplace=True))
    return nn.Sequential(*layers)


class InvertedResidualV3(nn.Module):
    def __init__(self, cin, k, expanded, cout, use_se, act, stride):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        layers = []
        if expanded != cin:
            layers.append(_conv_bn_act(cin, expanded, 1, act=act))
        layers.append(_conv_bn_act(expanded, expanded, k, stride, groups=expanded, act=act))
        if use_se:
            layers.append(SqueezeExcitation(expanded, _make_divisible(expanded // 4)))
        layers.append(_conv_bn_act(expanded, cout, 1, act=None))
        self.block = nn.Sequential(*layers)

    def forward(self, x):
        result = self.block(x)
        if self.use_res_connect:
            result += x
        return result


class MobileNetV3Small(nn.Module):
    # (input, kernel, expanded, output, SE, activation, stride) as torchvision lists them.
    SETTINGS = [(16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2),
                (24, 3, 88, 24, False, "RE", 1), (24, 5, 96, 40, True, "HS", 2),
                (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
                (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1),
                (48, 5, 288, 96, True, "HS", 2), (96, 5, 576, 96, True, "HS", 1),
                (96, 5, 576, 96, True, "HS", 1)]  # fmt: skip

    def __init__(self, width_mult=0.5, num_classes=10):
        super().__init__()
        c = partial(_make_divisible)
        layers = [_conv_bn_act(3, c(16 * width_mult), 3, 2, act=nn.Hardswish)]
        for cin, k, exp, cout, se, act, stride in self.SETTINGS:
            layers.append(InvertedResidualV3(c(cin * width_mult), k, c(exp * width_mult),
                                             c(cout * width_mult), se,
                                             nn.Hardswish if act == "HS" else nn.ReLU, stride))
        last = c(96 * width_mult)
        layers.append(_conv_bn_act(last, 6 * last, 1, act=nn.Hardswish))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Linear(6 * last, 256), nn.Hardswish(inplace=True),
                                        nn.Dropout(p=0.2, inplace=True), nn.Linear(256, num_classes))

    def forward(self, x):
        x = torch.flatten(self.avgpool(self.features(x)), 1)
        return self.classifier(x)


def mobilenet_v3_small() -> nn.Module:
    torch.manual_seed(0)
    return trained_batchnorm_statistics(MobileNetV3Small())


# --- EfficientNet-B0 (timm / torchvision.models.efficientnet) --------------------------------
class StochasticDepth(nn.Module):
    """torchvision.ops.StochasticDepth: identity in eval."""

    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        keep = torch.empty([x.shape[0], 1, 1, 1]).bernoulli_(1 - self.p)
        return x * keep / (1 - self.p)


class MBConv(nn.Module):
    def __init__(self, cin, cout, expand, k, stride, drop):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        hidden = cin * expand
        layers = [] if expand == 1 else [_conv_bn_act(cin, hidden, 1, act=nn.SiLU)]
        layers += [_conv_bn_act(hidden, hidden, k, stride, groups=hidden, act=nn.SiLU),
                   SqueezeExcitation(hidden, max(1, cin // 4), nn.SiLU, nn.Sigmoid),
                   _conv_bn_act(hidden, cout, 1, act=None)]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(drop)

    def forward(self, x):
        result = self.block(x)
        if self.use_res_connect:
            result = self.stochastic_depth(result)
            result += x
        return result


class EfficientNetB0(nn.Module):
    # (expand, kernel, stride, in, out, repeats) per stage, as B0 defines them.
    STAGES = [(1, 3, 1, 32, 16, 1), (6, 3, 2, 16, 24, 2), (6, 5, 2, 24, 40, 2),
              (6, 3, 2, 40, 80, 3), (6, 5, 1, 80, 112, 3), (6, 5, 2, 112, 192, 4),
              (6, 3, 1, 192, 320, 1)]  # fmt: skip

    def __init__(self, width=0.25, num_classes=10, depth_stages=4):
        super().__init__()
        c = lambda n: _make_divisible(n * width)  # noqa: E731
        layers = [_conv_bn_act(3, c(32), 3, 2, act=nn.SiLU)]
        stages = self.STAGES[:depth_stages]
        total, index = sum(s[-1] for s in stages), 0
        for expand, k, stride, cin, cout, repeats in stages:
            for i in range(repeats):
                drop = 0.2 * index / total
                layers.append(MBConv(c(cin) if i == 0 else c(cout), c(cout), expand, k,
                                     stride if i == 0 else 1, drop))
                index += 1
        last = c(stages[-1][4])
        layers.append(_conv_bn_act(last, 4 * last, 1, act=nn.SiLU))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=0.2, inplace=True),
                                        nn.Linear(4 * last, num_classes))

    def forward(self, x):
        return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))


def efficientnet_b0() -> nn.Module:
    """EfficientNet-B0's first four stages at a quarter of its width."""
    torch.manual_seed(0)
    return trained_batchnorm_statistics(EfficientNetB0())


# --- SqueezeNet 1.1 (torchvision.models.squeezenet) ------------------------------------------
class Fire(nn.Module):
    def __init__(self, inplanes, squeeze, expand1x1, expand3x3):
        super().__init__()
        self.squeeze = nn.Conv2d(inplanes, squeeze, 1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze, expand1x1, 1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze, expand3x3, 3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([self.expand1x1_activation(self.expand1x1(x)),
                          self.expand3x3_activation(self.expand3x3(x))], 1)


class SqueezeNet(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(64, 16, 64, 64), Fire(128, 16, 64, 64),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(128, 32, 128, 128), Fire(256, 32, 128, 128),
        )
        self.classifier = nn.Sequential(nn.Dropout(p=0.5), nn.Conv2d(256, num_classes, 1),
                                        nn.ReLU(inplace=True), nn.AdaptiveAvgPool2d((1, 1)))

    def forward(self, x):
        return torch.flatten(self.classifier(self.features(x)), 1)


def squeezenet() -> nn.Module:
    torch.manual_seed(0)
    return SqueezeNet().eval()

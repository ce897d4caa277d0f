"""Hugging Face ``transformers`` models with random weights from small configurations, as a
user exports them: token ids and an attention mask (int64) in, the last hidden state out.
The default attention implementation (``sdpa``) is kept."""

import torch
from torch import nn
from zoo_common import trained_batchnorm_statistics


class LastHiddenState(nn.Module):
    """Calls the model with keyword arguments and returns ``last_hidden_state``."""

    def __init__(self, model: nn.Module, *names: str):
        super().__init__()
        self.model, self.names = model.eval(), names

    def forward(self, *inputs):
        return self.model(**dict(zip(self.names, inputs))).last_hidden_state


def bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    torch.manual_seed(0)
    config = BertConfig(vocab_size=1000, hidden_size=64, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=128, max_position_embeddings=64)
    return LastHiddenState(BertModel(config, add_pooling_layer=False),
                           "input_ids", "attention_mask")


def distilbert() -> nn.Module:
    from transformers import DistilBertConfig, DistilBertModel

    torch.manual_seed(0)
    config = DistilBertConfig(vocab_size=1000, dim=64, n_layers=2, n_heads=2, hidden_dim=128,
                              max_position_embeddings=64)
    return LastHiddenState(DistilBertModel(config), "input_ids", "attention_mask")


def vit() -> nn.Module:
    from transformers import ViTConfig, ViTModel

    torch.manual_seed(0)
    config = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=64,
                       num_hidden_layers=2, num_attention_heads=2, intermediate_size=128)
    return LastHiddenState(ViTModel(config, add_pooling_layer=False), "pixel_values")


def whisper_encoder() -> nn.Module:
    from transformers import WhisperConfig
    from transformers.models.whisper.modeling_whisper import WhisperEncoder

    torch.manual_seed(0)
    config = WhisperConfig(num_mel_bins=16, d_model=64, encoder_layers=2,
                           encoder_attention_heads=2, encoder_ffn_dim=128,
                           max_source_positions=25)
    return LastHiddenState(WhisperEncoder(config), "input_features")


def wav2vec2() -> nn.Module:
    from transformers import Wav2Vec2Config, Wav2Vec2Model

    torch.manual_seed(0)
    config = Wav2Vec2Config(hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=128, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                            conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                            num_conv_pos_embedding_groups=4)
    return LastHiddenState(Wav2Vec2Model(config), "input_values")


def convnext() -> nn.Module:
    from transformers import ConvNextConfig, ConvNextModel

    torch.manual_seed(0)
    config = ConvNextConfig(num_channels=3, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 2, 1],
                            image_size=64)
    return LastHiddenState(ConvNextModel(config), "pixel_values")


def mobilevit() -> nn.Module:
    from transformers import MobileViTConfig, MobileViTModel

    torch.manual_seed(0)
    config = MobileViTConfig(image_size=64, hidden_sizes=[32, 48, 64],
                             neck_hidden_sizes=[8, 16, 24, 32, 40, 48, 160])
    # Hugging Face initialises MobileViT's last BatchNorm scales to zero (an all-zero output
    # with random weights); give every BatchNorm statistics a trained network would have.
    model = trained_batchnorm_statistics(MobileViTModel(config, expand_output=False))
    return LastHiddenState(model, "pixel_values")

"""ember.utils.model_zoo: torch.utils.model_zoo, the old home of load_url (ember.hub.load_state_dict_from_url)."""

from ..hub import load_state_dict_from_url as load_url

__all__ = ["load_url"]

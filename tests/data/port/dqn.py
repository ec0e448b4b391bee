"""A DQN agent's TD loss: the online Q-network and its target copy (frozen)."""

import copy

import torch.nn as nn
import torch.nn.functional as F


class QNetwork(nn.Module):
    def __init__(self, obs_dim, n_actions, hidden):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(obs_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, n_actions)
        )

    def forward(self, obs):
        return self.net(obs)


class DQN(nn.Module):
    def __init__(self, obs_dim=8, n_actions=4, hidden=32, gamma=0.99):
        super().__init__()
        self.q = QNetwork(obs_dim, n_actions, hidden)
        self.target = copy.deepcopy(self.q)
        for p in self.target.parameters():
            p.requires_grad_(False)
        self.gamma = gamma

    def forward(self, obs, actions, rewards, next_obs):
        q_taken = self.q(obs).gather(1, actions.unsqueeze(1)).squeeze(1)
        next_q = self.target(next_obs).max(dim=1).values
        td_target = rewards + self.gamma * next_q
        return F.smooth_l1_loss(q_taken, td_target.detach())

//! The input sequences of Table 2 (MI, DU, DR, SU, SR, SUR, DUL, ZZ).

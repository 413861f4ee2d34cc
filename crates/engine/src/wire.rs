//! Histograms on the wire: HdrHistogram's own V2 encoding, in base64, so a
//! result sent from another host merges bucket for bucket with local ones.
//! Percentiles cannot be averaged; histograms can be added.

pub mod histogram {
    use base64::Engine as _;
    use hdrhistogram::serialization::{Deserializer as HdrReader, Serializer as _, V2Serializer};
    use hdrhistogram::Histogram;
    use serde::{de::Error as _, ser::Error as _, Deserialize, Deserializer, Serializer};

    pub fn encode(h: &Histogram<u64>) -> Result<String, String> {
        let mut bytes = Vec::new();
        V2Serializer::new()
            .serialize(h, &mut bytes)
            .map_err(|e| format!("{e:?}"))?;
        Ok(base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn decode(text: &str) -> Result<Histogram<u64>, String> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(text)
            .map_err(|e| e.to_string())?;
        HdrReader::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| format!("{e:?}"))
    }

    pub fn serialize<S: Serializer>(h: &Histogram<u64>, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&encode(h).map_err(S::Error::custom)?)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Histogram<u64>, D::Error> {
        let text = String::deserialize(d)?;
        decode(&text).map_err(D::Error::custom)
    }
}

pub mod histogram_opt {
    use hdrhistogram::Histogram;
    use serde::{de::Error as _, ser::Error as _, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(h: &Option<Histogram<u64>>, s: S) -> Result<S::Ok, S::Error> {
        match h {
            Some(h) => s.serialize_some(&super::histogram::encode(h).map_err(S::Error::custom)?),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Histogram<u64>>, D::Error> {
        match Option::<String>::deserialize(d)? {
            Some(text) => super::histogram::decode(&text)
                .map(Some)
                .map_err(D::Error::custom),
            None => Ok(None),
        }
    }
}
